import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import {
  effectivePreferences,
  type PreferenceMap,
  type PreferenceUpdate,
  type StoredPreference,
} from '../domain/preferences';

/** The user's own rows, before the defaults fill in the rest (effectivePreferences). */
export async function storedPreferences(db: Pick<Pool, 'query'>, userId: string): Promise<StoredPreference[]> {
  const res = await db.query<{ type: string; in_app: boolean; email: string; push: boolean | null }>(
    'SELECT type, in_app, email, push FROM notification_preferences WHERE user_id = $1',
    [userId],
  );
  return res.rows.map((r) => ({ type: r.type, inApp: r.in_app, email: r.email, push: r.push }));
}

export async function getPreferences(pool: Pool, userId: string): Promise<PreferenceMap> {
  return effectivePreferences(await storedPreferences(pool, userId));
}

/**
 * Applies a validated update: each given type gets a full row (the unchanged channel keeps its
 * current effective value), so a later change of DEFAULT_PREFERENCES never half-applies to it.
 */
export async function updatePreferences(
  pool: Pool,
  userId: string,
  updates: PreferenceUpdate[],
): Promise<PreferenceMap> {
  return withTransaction(pool, async (tx) => {
    if (updates.length > 0) {
      // Serialises concurrent PUTs of one user (the row-level upserts alone could interleave reads).
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`notification-preferences:${userId}`]);
      const current = effectivePreferences(await storedPreferences(tx, userId));
      const rows = updates.map((u) => ({
        type: u.type,
        inApp: u.inApp ?? current[u.type].inApp,
        email: u.email ?? current[u.type].email,
        push: u.push ?? current[u.type].push,
      }));
      await tx.query(
        `INSERT INTO notification_preferences (user_id, type, in_app, email, push)
         SELECT $1, * FROM unnest($2::text[], $3::bool[], $4::text[], $5::bool[])
         ON CONFLICT (user_id, type) DO UPDATE
           SET in_app = EXCLUDED.in_app, email = EXCLUDED.email, push = EXCLUDED.push, updated_at = now()`,
        [userId, rows.map((r) => r.type), rows.map((r) => r.inApp), rows.map((r) => r.email), rows.map((r) => r.push)],
      );
    }
    return effectivePreferences(await storedPreferences(tx, userId));
  });
}
