import type { PoolClient } from 'pg';
import { claimEvents } from '@community/idempotency';
import { removeAllOf } from './subscriptions';

export interface ErasureCounts {
  subscriptions: number;
  /** Ledger rows of the user, kept without their payload (it quotes the notification's text). */
  deliveries: number;
}

/**
 * Erases a user's data from push-service's tables inside the caller's transaction, after claiming
 * the event in the inbox under `consumer` (null: processed already, no second effect):
 *
 * - push_subscriptions: deleted (the endpoints and keys identify the user's browsers); their
 *   pending pushes are cancelled first, so nothing more is sent to them.
 * - push_deliveries: KEPT without payload (set NULL): a row says what was sent and keeps a late
 *   copy of notification.created from pushing again; it holds the user id and the key, no content.
 * - push_deliveries of other users whose actor the user was: `actor_id` cleared (the user no longer
 *   counts among a group's people; the member itself counts until its notification is withdrawn).
 * - push_withdrawals: kept (a key and a user id), so a withdrawn notification stays withdrawn.
 */
export async function eraseUser(
  tx: PoolClient,
  consumer: string,
  event: { id: string },
  userId: string,
): Promise<ErasureCounts | null> {
  if ((await claimEvents(tx, consumer, [event.id])).length === 0) return null;
  const subscriptions = await removeAllOf(tx, userId);
  const deliveries = await tx.query(
    `UPDATE push_deliveries SET payload = NULL, updated_at = now() WHERE user_id = $1 AND payload IS NOT NULL`,
    [userId],
  );
  await tx.query(`UPDATE push_deliveries SET actor_id = NULL, updated_at = now() WHERE actor_id = $1`, [userId]);
  return { subscriptions, deliveries: deliveries.rowCount ?? 0 };
}
