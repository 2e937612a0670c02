import type { Pool, PoolClient } from 'pg';

/** A pool or a transaction's client: every function here runs inside the caller's transaction when given one. */
type Db = Pick<Pool | PoolClient, 'query'>;

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  locale: string | null;
  timezone: string | null;
  created_at: Date;
  updated_at: Date;
}

export async function userExists(db: Db, userId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM community_users WHERE id = $1', [userId]);
  return Boolean(rowCount);
}

/** The id of another user already holding `email`, if any. */
export async function emailHolder(db: Db, email: string, exceptId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM community_users WHERE email = $1 AND id <> $2', [
    email,
    exceptId,
  ]);
  return rows[0]?.id;
}

/**
 * Creates or replaces a user; `changed` is false (and the current row returned) when the profile is
 * the same as stored, so the caller emits `user.upserted` only for a real change.
 */
export async function upsertUser(
  tx: PoolClient,
  user: { id: string; email: string; displayName: string; locale?: string; timezone?: string },
): Promise<{ row: UserRow; inserted: boolean; changed: boolean }> {
  const { rows } = await tx.query<UserRow & { inserted: boolean }>(
    `INSERT INTO community_users (id, email, display_name, locale, timezone) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (id) DO UPDATE
       SET email = EXCLUDED.email, display_name = EXCLUDED.display_name, locale = EXCLUDED.locale,
           timezone = EXCLUDED.timezone, updated_at = now()
       WHERE (community_users.email, community_users.display_name, community_users.locale, community_users.timezone)
             IS DISTINCT FROM (EXCLUDED.email, EXCLUDED.display_name, EXCLUDED.locale, EXCLUDED.timezone)
     RETURNING *, (xmax = 0) AS inserted`,
    [user.id, user.email, user.displayName, user.locale ?? null, user.timezone ?? null],
  );
  if (rows.length > 0) return { row: rows[0], inserted: rows[0].inserted, changed: true };
  const current = await tx.query<UserRow>('SELECT * FROM community_users WHERE id = $1', [user.id]);
  return { row: current.rows[0], inserted: false, changed: false };
}

/** True when the follow is new (following twice changes nothing). */
export async function addFollow(tx: PoolClient, followerId: string, followeeId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'INSERT INTO community_follows (follower_id, followee_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    [followerId, followeeId],
  );
  return Boolean(rowCount);
}

/** True when a follow was removed. */
export async function removeFollow(tx: PoolClient, followerId: string, followeeId: string): Promise<boolean> {
  const { rowCount } = await tx.query('DELETE FROM community_follows WHERE follower_id = $1 AND followee_id = $2', [
    followerId,
    followeeId,
  ]);
  return Boolean(rowCount);
}

/**
 * Resolves @handles to user ids: a handle is a user id, compared case-insensitively (ids are
 * lowercase); otherwise a display name with its spaces removed, compared case-insensitively, when
 * exactly one user has it. Unresolved handles are absent from the map.
 */
export async function resolveHandles(tx: PoolClient, handles: string[]): Promise<Map<string, string>> {
  if (handles.length === 0) return new Map();
  const byId = await tx.query<{ id: string }>('SELECT id FROM community_users WHERE id = ANY($1::text[])', [handles]);
  const resolved = new Map<string, string>(byId.rows.map((r) => [r.id, r.id]));
  const rest = handles.filter((h) => !resolved.has(h));
  if (rest.length > 0) {
    // Display names have no index: this scan only runs for handles that are not ids (rare).
    const byName = await tx.query<{ handle: string; id: string }>(
      `SELECT lower(replace(display_name, ' ', '')) AS handle, min(id) AS id
       FROM community_users
       WHERE lower(replace(display_name, ' ', '')) = ANY($1::text[])
       GROUP BY 1 HAVING count(*) = 1`,
      [rest],
    );
    for (const r of byName.rows) resolved.set(r.handle, r.id);
  }
  return resolved;
}
