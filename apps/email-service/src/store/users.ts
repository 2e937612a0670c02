import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';

/** email-service's own projection of users' addresses and names (`email_users`), fed by `user.upserted`. */

export interface EmailUserRow {
  userId: string;
  email: string;
  displayName: string;
  locale: string | null;
  /** IANA time zone (user.upserted's timezone); null: UTC. Optional for rows built by hand. */
  timezone?: string | null;
}

/**
 * Last write wins on (occurredAt, event id): an update older than the row, or the same event
 * again, changes nothing. Events of one user can arrive out of order (retries, replays, several
 * producers), and the comparison makes the outcome independent of arrival order. The event id
 * breaks ties between two events stamped with the same millisecond, deterministically.
 * Returns false when the event was stale or a duplicate.
 */
export async function upsert(pool: Pool, event: EventOf<'user.upserted'>): Promise<boolean> {
  const { userId, email, displayName, locale, timezone } = event.data;
  // An event without a time zone (a producer from before the field) keeps the stored one.
  const res = await pool.query(
    `INSERT INTO email_users (user_id, email, display_name, locale, timezone, source_event_id, source_occurred_at, updated_at)
     VALUES ($1, $2, $3, $4, $7, $5, $6, now())
     ON CONFLICT (user_id) DO UPDATE
       SET email = EXCLUDED.email, display_name = EXCLUDED.display_name, locale = EXCLUDED.locale,
           timezone = COALESCE(EXCLUDED.timezone, email_users.timezone),
           source_event_id = EXCLUDED.source_event_id, source_occurred_at = EXCLUDED.source_occurred_at, updated_at = now()
     WHERE (email_users.source_occurred_at, email_users.source_event_id) < (EXCLUDED.source_occurred_at, EXCLUDED.source_event_id)`,
    [userId, email, displayName, locale ?? null, event.id, event.occurredAt, timezone ?? null],
  );
  return res.rowCount === 1;
}

export async function get(pool: Pool, userId: string): Promise<EmailUserRow | undefined> {
  const res = await pool.query<EmailUserRow>(
    `SELECT user_id AS "userId", email, display_name AS "displayName", locale, timezone FROM email_users WHERE user_id = $1`,
    [userId],
  );
  return res.rows[0];
}

/** Several users in one query (a recipient and an actor); unknown ids are absent. */
export async function getMany(pool: Pool, userIds: string[]): Promise<Map<string, EmailUserRow>> {
  const res = await pool.query<EmailUserRow>(
    `SELECT user_id AS "userId", email, display_name AS "displayName", locale, timezone FROM email_users WHERE user_id = ANY($1::text[])`,
    [[...new Set(userIds)]],
  );
  return new Map(res.rows.map((r) => [r.userId, r]));
}

/** Display names of several users at once (actors of a digest); unknown ids are absent. */
export async function displayNames(pool: Pool, userIds: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(userIds)];
  if (unique.length === 0) return new Map();
  const res = await pool.query<{ userId: string; displayName: string }>(
    `SELECT user_id AS "userId", display_name AS "displayName" FROM email_users WHERE user_id = ANY($1::text[])`,
    [unique],
  );
  return new Map(res.rows.map((r) => [r.userId, r.displayName]));
}

/** The user's time zone for digest windows: null when unknown (no row yet, or none given): UTC. */
export async function timeZoneOf(db: Pick<Pool, 'query'>, userId: string): Promise<string | null> {
  const res = await db.query<{ timezone: string | null }>(`SELECT timezone FROM email_users WHERE user_id = $1`, [
    userId,
  ]);
  return res.rows[0]?.timezone ?? null;
}
