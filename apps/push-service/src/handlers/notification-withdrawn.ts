import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { recordWithdrawal } from '../store/withdrawals';

/**
 * `push-service.send`: notification.withdrawn (its source was deleted). A push not sent yet never
 * is, and a notification.created of the key arriving later pushes nothing (store/withdrawals.ts).
 * A push already shown stays: Web Push cannot take a notification back from a device.
 */
export function notificationWithdrawnHandler(pool: Pool): Handler<EventOf<'notification.withdrawn'>> {
  return async (event, ctx) => {
    const d = event.data;
    const result = await recordWithdrawal(pool, { idempotencyKey: d.idempotencyKey, userId: d.userId });
    if (!result.recorded && result.cancelled === 0) return 'duplicate';
    ctx.logger.info({ idempotencyKey: d.idempotencyKey, cancelled: result.cancelled }, 'notification withdrawn');
    return 'processed';
  };
}
