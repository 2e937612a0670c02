import type { Logger } from 'pino';
import { deriveContext, DELIVERY, type RuntimeContext } from '../delivery';
import type { Middleware } from '../types';

/**
 * Binds the message's identity to `ctx.logger`: eventId, correlationId, attempt, messageType and the
 * idempotency key (the event id unless the consumer names another). The child logger is created on
 * first use: a pino child per message costs more than the rest of the runtime's per-message work,
 * and most successful messages never log.
 */
export function logContext<E>(idempotencyKey?: (event: E) => string | undefined): Middleware<E, RuntimeContext> {
  return (next) => (event, ctx) => {
    const base = ctx.logger;
    let logger: Logger | undefined;
    const bound = () =>
      (logger ??= base.child({
        eventId: ctx.eventId,
        correlationId: ctx.correlationId,
        attempt: ctx.attempt,
        messageType: ctx[DELIVERY].msg.properties.type,
        idempotencyKey: idempotencyKey?.(event) ?? ctx.eventId,
      }));
    return next(event, deriveContext(ctx, { logger: bound }));
  };
}
