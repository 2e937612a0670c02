import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  StackContextManager,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { propagationEnabled, startPublishSpan, traceCarrier } from './trace';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const WRITER_SPAN = '00f067aa0ba902b7';
const stored = { traceparent: `00-${TRACE_ID}-${WRITER_SPAN}-01` };
const row = {
  eventId: 'e-1',
  eventType: 'user.mentioned',
  routingKey: 'user.mentioned',
  aggregateId: 'ada',
  traceContext: stored,
};
const remote = () =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: WRITER_SPAN, traceFlags: 1, isRemote: true });

describe('outbox trace context, off (the default: no SDK, the no-op API)', () => {
  it('stores nothing and adds no header, even inside a span context', () => {
    expect(propagationEnabled()).toBe(false);
    expect(traceCarrier(remote())).toBeNull();
    expect(context.with(remote(), () => traceCarrier())).toBeNull();
    const span = startPublishSpan(row, 'community-api');
    expect(span.headers).toBeUndefined();
    span.end(new Error('ignored'));
  });
});

describe('outbox trace context, on', () => {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
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

  it("captures the active span's context for the row, and nothing outside any span", () => {
    expect(context.with(remote(), () => traceCarrier())).toEqual(stored);
    expect(traceCarrier()).toBeNull();
  });

  it('publishes a row in a PRODUCER span, child of the stored context, whose context the headers carry', () => {
    const span = startPublishSpan(row, 'community-api');
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done.name).toBe('publish user.mentioned');
    expect(done.kind).toBe(SpanKind.PRODUCER);
    expect(done.parentSpanContext?.spanId).toBe(WRITER_SPAN);
    expect(done.spanContext().traceId).toBe(TRACE_ID);
    expect(span.headers).toEqual({ traceparent: `00-${TRACE_ID}-${done.spanContext().spanId}-01` });
    expect(done.attributes).toMatchObject({
      'messaging.message.id': 'e-1',
      'outbox.producer': 'community-api',
      'outbox.aggregate_id': 'ada',
    });
  });

  it('starts a new trace for a row stored without context, and records a failed publish', () => {
    const span = startPublishSpan({ ...row, traceContext: null }, 'community-api');
    span.end(new Error('nacked'));
    const [done] = exporter.getFinishedSpans();
    expect(done.parentSpanContext).toBeUndefined();
    expect(done.spanContext().traceId).not.toBe(TRACE_ID);
    expect(span.headers?.traceparent).toContain(done.spanContext().traceId);
    expect(done.status).toEqual({ code: SpanStatusCode.ERROR, message: 'nacked' });
  });
});
