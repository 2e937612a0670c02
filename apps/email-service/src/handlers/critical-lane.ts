import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { isCriticalEmail } from '../domain/lanes';

type NotificationCreated = EventOf<'notification.created'>;

/**
 * `email-service.send-critical` receives every notification.created (the routing key is the event
 * type; the notification type is only in the body), so this lane hands only critical email to
 * `handle` and acks the rest at once: acking costs microseconds, so even a deep backlog of other
 * email is crossed in moments. `handle` is the regular lane's handler: the ledger's one row per
 * idempotency key makes whichever lane comes second a duplicate, without a second email.
 *
 * A bad message is dead-lettered here as on every queue (the runtime checks the properties and the
 * contract before this handler): the same bad message then has a DLQ entry per queue it reached.
 */
export function criticalLaneHandler(handle: Handler<NotificationCreated>): Handler<NotificationCreated> {
  return async (event, ctx) => {
    if (!isCriticalEmail(event.data.type)) return 'skipped';
    return handle(event, ctx);
  };
}
