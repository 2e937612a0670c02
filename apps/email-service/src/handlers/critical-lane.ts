import type { EventOf } from '@community/contracts';
import type { Middleware } from '@community/messaging';
import { isCriticalEmail } from '../domain/lanes';

type NotificationCreated = EventOf<'notification.created'>;

/**
 * `email-service.send-critical` receives the notification.created whose `notification-type` header
 * is security_alert (a headers exchange, libs/contracts topology.ts), so other email never crosses
 * it. The body's type is still checked: a header that disagrees with the body is acked here, and the
 * regular lane, which receives every notification.created, emails it as its body says. A consumer
 * middleware around the regular lane's handler: the ledger's one row per idempotency key makes whichever lane comes
 * second a duplicate, without a second email.
 *
 * A bad message is dead-lettered here as on every queue (the runtime checks the properties and the
 * contract before this handler): the same bad message then has a DLQ entry per queue it reached.
 */
export const criticalLaneOnly: Middleware<NotificationCreated> = (handle) => {
  return async (event, ctx) => {
    if (!isCriticalEmail(event.data.type)) return 'skipped';
    return handle(event, ctx);
  };
};
