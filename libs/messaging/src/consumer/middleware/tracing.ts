import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type TextMapGetter,
} from '@opentelemetry/api';
import { DELIVERY, type Delivery, type RuntimeContext } from '../delivery';
import type { Handler, MessageContext } from '../types';

/**
 * Tracing of one message (docs/TRACING.md): a CONSUMER span, child of the W3C trace context the
 * producer put in the AMQP headers (`traceparent`, `tracestate`), active while the message is
 * validated and handled. So whatever the handler does inside it (SQL, its own outbox rows, whose
 * context the outbox stores) continues the producer's trace.
 *
 * Explicit propagation through @opentelemetry/api, not the amqplib instrumentation: events reach
 * the broker through an outbox, so the publishing code never runs in the producer's context, and
 * the consumer side is one place here.
 *
 * Only in the pipeline when a propagator is registered (an SDK was started): with tracing off
 * (the default) no per-message work is added at all.
 */

/** AMQP header values arrive as strings, or as Buffers for some producers' long strings. */
const amqpHeaders: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get(carrier, key) {
    const v = carrier[key];
    if (typeof v === 'string') return v;
    if (Buffer.isBuffer(v)) return v.toString('utf8');
    return undefined;
  },
};

/** The consumer span's context of each message in flight: batch handlers read it per item. */
const contexts = new WeakMap<Delivery, Context>();

/**
 * The trace context of the message behind `ctx` (its consumer span), for work done outside the
 * message's own async context: a batch handler writing each item's outgoing events. Undefined
 * when tracing is off.
 */
export function messageTraceContext(ctx: MessageContext): Context | undefined {
  const d = (ctx as Partial<RuntimeContext>)[DELIVERY];
  return d ? contexts.get(d) : undefined;
}

/** Whether an SDK registered a propagator: the no-op API has none. */
export const tracingEnabled = (): boolean => propagation.fields().length > 0;

export function tracing<C extends RuntimeContext>(o: {
  queue: string;
  handler: string;
}): (next: Handler<Buffer, C>) => Handler<Buffer, C> {
  const tracer = trace.getTracer('@community/messaging');
  return (next) => (body, ctx) => {
    const d = ctx[DELIVERY];
    const { properties, fields } = d.msg;
    const parent = propagation.extract(
      ROOT_CONTEXT,
      (properties.headers ?? {}) as Record<string, unknown>,
      amqpHeaders,
    );
    const span = tracer.startSpan(
      `process ${o.queue}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'rabbitmq',
          'messaging.operation.type': 'process',
          'messaging.operation.name': 'process',
          'messaging.destination.name': fields.exchange,
          'messaging.rabbitmq.destination.routing_key': fields.routingKey,
          'messaging.consumer.group.name': o.queue,
          'messaging.message.id': ctx.eventId,
          'messaging.message.conversation_id': ctx.correlationId,
          'messaging.handler': o.handler,
          'messaging.retry.attempt': ctx.attempt,
          'messaging.rabbitmq.delivery_count': ctx.deliveryCount,
        },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    contexts.set(d, active);
    return otelContext
      .with(active, () => next(body, ctx))
      .then(
        (outcome) => {
          if (outcome) span.setAttribute('messaging.outcome', outcome);
          span.end();
          contexts.delete(d);
          return outcome;
        },
        (err: unknown) => {
          span.recordException(err instanceof Error ? err : String(err));
          span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
          span.end();
          contexts.delete(d);
          throw err;
        },
      );
  };
}
