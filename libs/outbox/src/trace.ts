import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
} from '@opentelemetry/api';

/**
 * Trace context across the outbox (docs/TRACING.md). The row is the hop where automatic context
 * propagation ends: the request that writes it has finished long before the relay publishes it,
 * in another async context (or process). So the writer stores its W3C trace context with the row,
 * and the relay's publish span continues it explicitly.
 *
 * Everything here goes through @opentelemetry/api only. Without a started SDK (tracing off, the
 * default) no propagator is registered: nothing is stored, no span is made, no header is added.
 */

/** `traceparent` and `tracestate` (whatever the registered propagator writes), as stored in `outbox_messages.trace_context`. */
export type TraceCarrier = Record<string, string>;

/** True once an SDK (or a test) registered a propagator; the no-op API has none. */
export function propagationEnabled(): boolean {
  return propagation.fields().length > 0;
}

/**
 * The carrier of `ctx` (default: the active context, e.g. the HTTP request's span), or null when
 * tracing is off or there is no span to continue.
 */
export function traceCarrier(ctx?: Context): TraceCarrier | null {
  if (!propagationEnabled()) return null;
  const carrier: TraceCarrier = {};
  propagation.inject(ctx ?? otelContext.active(), carrier);
  return Object.keys(carrier).length > 0 ? carrier : null;
}

const tracer = trace.getTracer('@community/outbox');

export interface PublishSpan {
  /** The AMQP headers carrying the publish span's context; undefined when tracing is off. */
  headers: TraceCarrier | undefined;
  end(err?: unknown): void;
}

const OFF: PublishSpan = { headers: undefined, end: () => undefined };

export interface PublishedRow {
  eventId: string;
  eventType: string;
  routingKey: string;
  aggregateId: string;
  traceContext: TraceCarrier | null;
}

/**
 * The relay's PRODUCER span for one row, a child of the context stored with the row (a new trace
 * when the row has none, e.g. written outside any request), and the headers that carry it to the
 * consumers. Ended by the caller on the broker's confirm (or the failure).
 */
export function startPublishSpan(row: PublishedRow, producer: string, enabled = propagationEnabled()): PublishSpan {
  if (!enabled) return OFF;
  const parent = row.traceContext ? propagation.extract(ROOT_CONTEXT, row.traceContext) : ROOT_CONTEXT;
  const span = tracer.startSpan(
    `publish ${row.eventType}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'rabbitmq',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'publish',
        'messaging.rabbitmq.destination.routing_key': row.routingKey,
        'messaging.message.id': row.eventId,
        'outbox.producer': producer,
        'outbox.aggregate_id': row.aggregateId,
      },
    },
    parent,
  );
  const headers: TraceCarrier = {};
  propagation.inject(trace.setSpan(parent, span), headers);
  return {
    headers,
    end(err?: unknown) {
      if (err !== undefined) {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      }
      span.end();
    },
  };
}
