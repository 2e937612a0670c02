import { context, propagation, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  StackContextManager,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { Registry } from 'prom-client';
import { PermanentError } from '../../errors';
import { runtimeMetrics } from '../../metrics';
import { buildPipeline } from '../pipeline';
import { testDelivery } from '../test-delivery';
import type { Handler } from '../types';
import { ConsumerSeries } from './metrics';
import { messageTraceContext, tracing } from './tracing';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN = '00f067aa0ba902b7';
const traceparent = `00-${TRACE_ID}-${PRODUCER_SPAN}-01`;

function pipeline(terminal: Handler<{ n: number }>) {
  const metrics = runtimeMetrics(new Registry());
  return buildPipeline<{ n: number }>({
    queue: 'q',
    handler: 'h',
    logger: testDelivery().delivery.ctx.logger,
    retryDelaysMs: [1000],
    classifiers: [],
    metrics,
    series: new ConsumerSeries(metrics, 'q', 'h'),
    validate: (body) => JSON.parse(body.toString()) as { n: number },
    middleware: [],
    timeoutMs: 1000,
    terminal,
  });
}

describe('consumer tracing, off (the default: no SDK, the no-op API)', () => {
  it("is not in the pipeline: a producer's traceparent starts nothing and the handler sees no span", async () => {
    expect(propagation.fields()).toEqual([]);
    const { delivery } = testDelivery({ body: '{"n":1}', headers: { traceparent } });
    const seen: unknown[] = [];
    await pipeline(async (_e, ctx) => {
      seen.push(trace.getActiveSpan(), messageTraceContext(ctx));
      return 'processed';
    })(delivery.msg.content, delivery.ctx);
    expect(seen).toEqual([undefined, undefined]);
  });
});

describe('consumer tracing, on', () => {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    // StackContextManager: enough for the synchronous hand-over checked here (the apps get the SDK's async one).
    context.setGlobalContextManager(new StackContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }));
  });
  afterAll(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  it("starts a CONSUMER span, child of the producer's context, active in the handler and readable per message", async () => {
    const { delivery } = testDelivery({ body: '{"n":1}', headers: { traceparent } });
    let inHandler: string | undefined;
    let perMessage: string | undefined;
    await pipeline(async (_e, ctx) => {
      inHandler = trace.getActiveSpan()?.spanContext().spanId;
      const c = messageTraceContext(ctx);
      perMessage = c && trace.getSpan(c)?.spanContext().spanId;
      return 'processed';
    })(delivery.msg.content, delivery.ctx);

    const [span] = exporter.getFinishedSpans();
    expect(span.name).toBe('process q');
    expect(span.kind).toBe(SpanKind.CONSUMER);
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.parentSpanContext?.spanId).toBe(PRODUCER_SPAN);
    expect(inHandler).toBe(span.spanContext().spanId);
    expect(perMessage).toBe(span.spanContext().spanId);
    expect(span.attributes).toMatchObject({
      'messaging.message.id': 'e-1',
      'messaging.consumer.group.name': 'q',
      'messaging.outcome': 'processed',
    });
    // Only while the message is in flight.
    expect(messageTraceContext(delivery.ctx)).toBeUndefined();
  });

  it('reads a traceparent sent as bytes, and starts a new trace without one', async () => {
    const bytes = testDelivery({ body: '{"n":1}', headers: { traceparent: Buffer.from(traceparent) } });
    await pipeline(async () => 'processed')(bytes.delivery.msg.content, bytes.delivery.ctx);
    const none = testDelivery({ body: '{"n":1}' });
    await pipeline(async () => 'processed')(none.delivery.msg.content, none.delivery.ctx);
    const [withBytes, fresh] = exporter.getFinishedSpans();
    expect(withBytes.spanContext().traceId).toBe(TRACE_ID);
    expect(fresh.spanContext().traceId).not.toBe(TRACE_ID);
    expect(fresh.parentSpanContext).toBeUndefined();
  });

  it("records the handler's error on the span, and the failure is still routed (DLQ copy keeps the traceparent)", async () => {
    const { delivery, published } = testDelivery({ body: '{"n":1}', headers: { traceparent } });
    await pipeline(async () => {
      throw new PermanentError('bad data');
    })(delivery.msg.content, delivery.ctx);
    const [span] = exporter.getFinishedSpans();
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'bad data' });
    expect(span.events.map((e) => e.name)).toEqual(['exception']);
    expect(published.map((p) => [p.routingKey, p.options.headers?.traceparent])).toEqual([['q.dlq', traceparent]]);
  });

  it('wraps any handler directly too (the middleware alone)', async () => {
    const { delivery } = testDelivery({ headers: { traceparent } });
    await tracing({ queue: 'q2', handler: 'h2' })(async () => undefined)(delivery.msg.content, delivery.ctx);
    expect(exporter.getFinishedSpans().map((s) => [s.name, s.attributes['messaging.handler']])).toEqual([
      ['process q2', 'h2'],
    ]);
  });
});
