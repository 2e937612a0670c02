import type { Pool } from 'pg';
import type { QuietHours } from '@community/contracts';
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

/** What the preferences API answers: every type's channels, and the quiet hours. */
export interface UserPreferences {
  preferences: PreferenceMap;
  /** docs/NOTIFICATIONS.md "Delivery timing"; null: none. */
  quietHours: QuietHours | null;
}

/** The user's quiet hours, kept on their counter row (the row every batch locks and reads). */
async function storedQuietHours(db: Pick<Pool, 'query'>, userId: string): Promise<QuietHours | null> {
  const res = await db.query<{ quiet_start: string | null; quiet_end: string | null }>(
    'SELECT quiet_start, quiet_end FROM notification_counters WHERE user_id = $1',
    [userId],
  );
  const row = res.rows[0];
  return row && row.quiet_start !== null && row.quiet_end !== null
    ? { start: row.quiet_start, end: row.quiet_end }
    : null;
}

export async function getPreferences(pool: Pool, userId: string): Promise<UserPreferences> {
  return withTransaction(pool, { isolation: 'repeatable read', readOnly: true }, async (tx) => ({
    preferences: effectivePreferences(await storedPreferences(tx, userId)),
    quietHours: await storedQuietHours(tx, userId),
  }));
}

/**
 * Applies a validated update: each given type gets a full row (the unchanged channel keeps its
 * current effective value), so a later change of DEFAULT_PREFERENCES never half-applies to it.
 */
export async function updatePreferences(
  pool: Pool,
  userId: string,
  updates: PreferenceUpdate[],
  /** New quiet hours (null: none); undefined: unchanged. */
  quietHours?: QuietHours | null,
): Promise<UserPreferences> {
  return withTransaction(pool, async (tx) => {
    if (quietHours !== undefined) {
      // The counter row, created if the user has none yet (an empty inbox at version 0, as before
      // any notification); its inbox version stays: quiet hours are no change of the inbox.
      await tx.query(
        `INSERT INTO notification_counters AS c (user_id, quiet_start, quiet_end) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET quiet_start = EXCLUDED.quiet_start, quiet_end = EXCLUDED.quiet_end`,
        [userId, quietHours?.start ?? null, quietHours?.end ?? null],
      );
    }
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
    return {
      preferences: effectivePreferences(await storedPreferences(tx, userId)),
      quietHours: await storedQuietHours(tx, userId),
    };
  });
}
