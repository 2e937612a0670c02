import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { recordWithdrawal } from '../store/withdrawals';

/**
 * `email-service.send`: notification.withdrawn (its source was deleted). The email that has not
 * gone out yet never will: a pending immediate email is suppressed, a digest item is left out of
 * its digest, and a notification.created arriving later sends nothing (store/withdrawals.ts).
 */
export function notificationWithdrawnHandler(pool: Pool): Handler<EventOf<'notification.withdrawn'>> {
  return async (event, ctx) => {
    const d = event.data;
    const result = await recordWithdrawal(pool, {
      idempotencyKey: d.idempotencyKey,
      userId: d.userId,
      subject: d.subject,
    });
    if (!result.recorded) return 'duplicate';
    ctx.logger.info(
      { idempotencyKey: d.idempotencyKey, subject: d.subject, suppressed: result.suppressed },
      'notification withdrawn',
    );
    return 'processed';
  };
}
