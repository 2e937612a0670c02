import { isSpanContextValid, trace } from '@opentelemetry/api';
import { tracingEnabled } from './http-tracing';

/**
 * With tracing on, every log line written inside a span carries its `traceId` and `spanId`, so a
 * line leads to its trace and back (docs/TRACING.md). A pino mixin: child loggers inherit it.
 * Undefined with tracing off: the logger then has no mixin at all.
 */
export function traceLogMixin(): (() => Record<string, string>) | undefined {
  if (!tracingEnabled()) return undefined;
  return (): Record<string, string> => {
    const ctx = trace.getActiveSpan()?.spanContext();
    if (!ctx || !isSpanContextValid(ctx)) return {};
    return { traceId: ctx.traceId, spanId: ctx.spanId };
  };
}
