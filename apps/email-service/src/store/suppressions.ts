import type { Pool } from 'pg';

/**
 * Local opt-outs (`email_suppressions`), written by the unsubscribe endpoint.
 *
 * notification-service owns preferences and stamps its decision on each notification.created
 * (`emailChannel`). An email decided *before* the user unsubscribed still arrives with the old
 * decision, so email-service checks this table before sending. A suppression blocks a notification
 * when notification-service may not have known of it at decision time:
 *   - not synced yet (the preference update has not reached notification-service), or
 *   - the notification was decided before the sync (+ a clock-skew allowance).
 * Notifications decided later carry notification-service's current preference, which is the
 * opt-out, or a re-subscription the user made since: that one must win, so the block ends there.
 */
export const SUPPRESSION_SKEW_MS = 60_000;

export interface PendingSync {
  userId: string;
  scope: string;
  syncAttempts: number;
}

const BLOCKS = `s.scope = ANY($2::text[]) AND (s.synced_at IS NULL OR $3::timestamptz < s.synced_at + ${SUPPRESSION_SKEW_MS} * interval '1 millisecond')`;

/** SQL predicate for digest items (alias `i`), shared with the digest store. */
export const ITEM_BLOCKED_SQL = `EXISTS (
  SELECT 1 FROM email_suppressions s
   WHERE s.user_id = i.user_id AND s.scope IN (i.notification_type, 'digest')
     AND (s.synced_at IS NULL OR i.occurred_at < s.synced_at + ${SUPPRESSION_SKEW_MS} * interval '1 millisecond'))`;

/** Records (or renews) an opt-out; it is pushed to notification-service by `claimDueSyncs`. */
export async function add(pool: Pool, userId: string, scope: string): Promise<void> {
  await pool.query(
    `INSERT INTO email_suppressions (user_id, scope) VALUES ($1, $2)
     ON CONFLICT (user_id, scope) DO UPDATE
       SET created_at = now(), synced_at = NULL, sync_attempts = 0, next_sync_at = now(), last_sync_error = NULL`,
    [userId, scope],
  );
}

/** True when any of `scopes` blocks a notification for `userId` decided at `decidedAt`. */
export async function blocks(pool: Pool, userId: string, scopes: string[], decidedAt: Date): Promise<boolean> {
  const res = await pool.query(`SELECT 1 FROM email_suppressions s WHERE s.user_id = $1 AND ${BLOCKS} LIMIT 1`, [
    userId,
    scopes,
    decidedAt,
  ]);
  return (res.rowCount ?? 0) > 0;
}

/**
 * Unsynced opt-outs whose next try is due, pushed `leaseMs` into the future so that concurrent
 * schedulers (replicas) take disjoint rows.
 */
export async function claimDueSyncs(pool: Pool, now: Date, limit: number, leaseMs: number): Promise<PendingSync[]> {
  const res = await pool.query<PendingSync>(
    `UPDATE email_suppressions
        SET next_sync_at = $1::timestamptz + $3::float8 * interval '1 millisecond', sync_attempts = sync_attempts + 1
      WHERE (user_id, scope) IN (
        SELECT user_id, scope FROM email_suppressions
         WHERE synced_at IS NULL AND next_sync_at <= $1
         ORDER BY next_sync_at LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING user_id AS "userId", scope, sync_attempts AS "syncAttempts"`,
    [now, limit, leaseMs],
  );
  return res.rows;
}

export async function markSynced(pool: Pool, userId: string, scope: string): Promise<void> {
  await pool.query(
    `UPDATE email_suppressions SET synced_at = now(), last_sync_error = NULL WHERE user_id = $1 AND scope = $2`,
    [userId, scope],
  );
}

export async function markSyncFailed(
  pool: Pool,
  userId: string,
  scope: string,
  error: string,
  nextSyncAt: Date,
): Promise<void> {
  await pool.query(
    `UPDATE email_suppressions SET last_sync_error = $3, next_sync_at = $4 WHERE user_id = $1 AND scope = $2 AND synced_at IS NULL`,
    [userId, scope, error.slice(0, 1000), nextSyncAt],
  );
}
