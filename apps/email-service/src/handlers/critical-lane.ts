import { ContractError, type EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { isCriticalEmail } from '../domain/lanes';

type NotificationCreated = EventOf<'notification.created'>;

/**
 * `email-service.send-critical` receives every notification.created (the routing key is the event
 * type; the notification type is only in the body), so this lane's validator and handler let
 * through only critical email and ack the rest at once; acking costs microseconds, so even a deep
 * backlog of other email is crossed in moments.
 *
 * A message that is not a valid notification.created is acked here too: its copy on
 * `email-service.send` is dead-lettered with the reason, one DLQ entry per bad message.
 */
export function criticalLaneValidator(validate: (body: Buffer) => NotificationCreated): (body: Buffer) => NotificationCreated | null {
  return (body) => {
    try {
      return validate(body);
    } catch (err) {
      if (err instanceof ContractError) return null;
      throw err;
    }
  };
}

/**
 * Critical email goes to `handle` (the same handler as the regular lane: the ledger's one row per
 * idempotency key makes whichever lane comes second a duplicate, without a second email).
 */
export function criticalLaneHandler(handle: Handler<NotificationCreated>): Handler<NotificationCreated | null> {
  return async (event, ctx) => {
    if (event === null || !isCriticalEmail(event.data.type)) return 'skipped';
    return handle(event, ctx);
  };
}
