import { withDeadline } from '../deadline';
import { deriveContext, type RuntimeContext } from '../delivery';
import type { Middleware } from '../types';

/**
 * The handler's deadline (the visibility-timeout analogue): at `timeoutMs` the handler's signal
 * aborts and the call fails with HandlerTimeoutError (transient: a retry tier). The signal also
 * aborts when the incoming `ctx.signal` does (the consumer's forced shutdown).
 */
export function deadline<E>(timeoutMs: number): Middleware<E, RuntimeContext> {
  return (next) => (event, ctx) =>
    withDeadline(timeoutMs, ctx.signal, (deadline) =>
      next(event, deriveContext(ctx, { signal: () => deadline.signal })),
    );
}
