import { withDeadline } from '../deadline';
import { deriveContext } from '../delivery';
import type { MessageContext, Middleware } from '../types';

/**
 * The handler's deadline (the visibility-timeout analogue): at `timeoutMs` the handler's signal
 * aborts and the call fails with HandlerTimeoutError (transient: a retry tier). The signal also
 * aborts when the incoming `ctx.signal` does (the consumer's forced shutdown).
 */
export function deadline<E, C extends MessageContext>(timeoutMs: number): Middleware<E, C> {
  return (next) => (event, ctx) => withDeadline(timeoutMs, ctx.signal, (signal) => next(event, deriveContext(ctx, { signal: { value: signal, enumerable: true } })));
}
