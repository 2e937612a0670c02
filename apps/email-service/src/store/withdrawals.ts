import type { Pool } from 'pg';
import { withTransaction } from '@community/db';

/**
 * email_withdrawals: the business keys of withdrawn notifications (notification.withdrawn,
 * docs/EMAIL.md "Withdrawn notifications").
 */

/** SQL predicate for digest items (alias `i`): the item's notification was withdrawn. */
export const ITEM_WITHDRAWN_SQL = `EXISTS (SELECT 1 FROM email_withdrawals x WHERE x.idempotency_key = i.idempotency_key)`;

export interface Withdrawal {
  idempotencyKey: string;
  userId: string;
  subject: string;
}

export interface WithdrawResult {
  /** false: a copy of this withdrawal was recorded before (nothing more to do). */
  recorded: boolean;
  /** Immediate emails not yet sent that will now never be: pending or failed → suppressed. */
  suppressed: number;
}

/**
 * Records the tombstone and suppresses the immediate email of the key if it has not gone out yet
 * (pending or failed). An email being sent right now (`sending`, under a lease) or already sent is
 * left alone: it was already on its way. Digest items need nothing here: flush and send leave out
 * every item with a tombstone (ITEM_WITHDRAWN_SQL), so an item withdrawn any time before its digest
 * is composed is not in it.
 */
export async function recordWithdrawal(pool: Pool, w: Withdrawal): Promise<WithdrawResult> {
  return withTransaction(pool, async (tx) => {
    const tomb = await tx.query(
      `INSERT INTO email_withdrawals (idempotency_key, user_id, subject) VALUES ($1, $2, $3)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [w.idempotencyKey, w.userId, w.subject.slice(0, 1000)],
    );
    const suppressed = await tx.query(
      `UPDATE email_deliveries SET state = 'suppressed', last_error = $2, updated_at = now()
        WHERE idempotency_key = $1 AND channel = 'immediate' AND state IN ('pending', 'failed')`,
      [w.idempotencyKey, `withdrawn: ${w.subject}`.slice(0, 1000)],
    );
    return { recorded: (tomb.rowCount ?? 0) > 0, suppressed: suppressed.rowCount ?? 0 };
  });
}

/** Whether the notification with this business key was withdrawn. */
export async function isWithdrawn(pool: Pool, idempotencyKey: string): Promise<boolean> {
  const { rows } = await pool.query(`SELECT 1 FROM email_withdrawals WHERE idempotency_key = $1`, [idempotencyKey]);
  return rows.length > 0;
}
