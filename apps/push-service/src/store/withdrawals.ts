import type { Pool } from 'pg';
import { withTransaction } from '@community/db';

/**
 * notification.withdrawn: a tombstone for the business key (push_withdrawals) and the key's pushes
 * not sent yet cancelled, under the same advisory lock as ledger.decide, so a notification.created
 * of the key arriving later (or concurrently) pushes nothing. A push being sent right now finishes.
 */
export async function recordWithdrawal(
  pool: Pool,
  w: { idempotencyKey: string; userId: string },
): Promise<{ recorded: boolean; cancelled: number }> {
  return withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`push-key:${w.idempotencyKey}`]);
    const tomb = await tx.query(
      `INSERT INTO push_withdrawals (idempotency_key, user_id) VALUES ($1, $2) ON CONFLICT (idempotency_key) DO NOTHING`,
      [w.idempotencyKey, w.userId],
    );
    const cancelled = await tx.query(
      `UPDATE push_deliveries SET state = 'cancelled', last_error = 'withdrawn', updated_at = now()
        WHERE idempotency_key = $1 AND state = 'pending'`,
      [w.idempotencyKey],
    );
    return { recorded: tomb.rowCount === 1, cancelled: cancelled.rowCount ?? 0 };
  });
}
