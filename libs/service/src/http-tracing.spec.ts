import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@community/observability';
import { createRegistry } from '@community/observability';
import { buildServer } from './server';
import { startTracing, type Tracing } from '@community/observability';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const logger = createLogger({ service: 'test-service', level: 'silent' });
const build = () =>
  buildServer({ logger, registry: createRegistry({ service: 'test-service' }), readiness: () => ({}) });

describe('HTTP server spans, tracing off', () => {
  it('adds no hook: a handler runs in no span, whatever traceparent the caller sends', async () => {
    const app = build();
    let active: unknown = 'unset';
    app.post('/x', async () => {
      active = trace.getActiveSpan();
      return {};
    });
    await app.inject({
      method: 'POST',
      url: '/x',
      payload: { a: 1 },
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    });
    expect(active).toBeUndefined();
    await app.close();
  });
});

describe('HTTP server spans, tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let app: FastifyInstance;
  let url: string;
  const seen: Array<string | undefined> = [];
  beforeAll(async () => {
    tracing = startTracing('test-service', { spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    app = build();
    app.post<{ Params: { id: string }; Body: { n: number } }>('/things/:id', async (request, reply) => {
      await sleep(5); // the span stays active across awaits, not only in the synchronous part
      seen.push(trace.getActiveSpan()?.spanContext().spanId);
      return reply.code(201).send({ id: request.params.id, n: request.body.n });
    });
    app.get('/boom', async () => {
      throw new Error('boom');
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app.close();
    await tracing.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    seen.length = 0;
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  afterAll(() => agent.destroy());
  /**
   * A POST over a real socket (kept alive, one socket), its body sent 50 ms after the headers: the
   * body then arrives in 'data' events of the socket, outside the request's own async context.
   */
  function slowPost(traceparent?: string): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      const body = JSON.stringify({ n: 1 });
      const req = request(`${url}/things/7?x=1`, {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(traceparent ? { traceparent } : {}),
        },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', reject);
      req.flushHeaders();
      setTimeout(() => req.end(body), 50);
    });
  }
  // The span ends in onResponse, which fastify runs once the response has been written: possibly
  // just after inject() resolved. Waits for the spans themselves, up to a generous 15 s (a loaded
  // machine), not for a fixed 500 ms; a span that never ends fails on its count below.
  async function finished(n: number) {
    const deadline = Date.now() + 15_000;
    while (exporter.getFinishedSpans().length < n && Date.now() < deadline) await sleep(5);
    return exporter.getFinishedSpans();
  }

  it("continues the caller's traceparent in a SERVER span named after the route, active in the handler after the body is read", async () => {
    expect(await slowPost(`00-${TRACE_ID}-${CALLER_SPAN}-01`)).toBe(201);
    const [span] = await finished(1);
    expect(span.name).toBe('POST /things/:id');
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(span.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/things/:id',
      'url.path': '/things/7',
      'http.response.status_code': 201,
    });
    expect(seen).toEqual([span.spanContext().spanId]);
  });

  it("keeps requests apart on one keep-alive connection: each handler runs in its own request's span", async () => {
    for (let i = 0; i < 3; i++) expect(await slowPost()).toBe(201);
    const spans = await finished(3);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(3);
    expect(seen).toEqual(spans.map((s) => s.spanContext().spanId));
  });

  it('starts a new trace without traceparent; a 5xx is an error, a 404 keeps the bare method name', async () => {
    expect((await app.inject({ method: 'GET', url: '/boom' })).statusCode).toBe(500);
    expect((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
    const [boom, missing] = await finished(2);
    expect(boom.parentSpanContext).toBeUndefined();
    expect([boom.name, boom.status.code, boom.attributes['http.response.status_code']]).toEqual([
      'GET /boom',
      SpanStatusCode.ERROR,
      500,
    ]);
    expect([missing.name, missing.status.code, missing.attributes['http.response.status_code']]).toEqual([
      'GET',
      SpanStatusCode.UNSET,
      404,
    ]);
  });
});

describe('log lines inside a span, tracing on', () => {
  it('carry traceId and spanId (a logger created before tracing started carries nothing)', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const destination = { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) };
    const before = createLogger({ service: 's', destination });
    const tracing = startTracing('s', {
      spanProcessors: [new SimpleSpanProcessor({ exporter: new InMemorySpanExporter() })],
    });
    const after = createLogger({ service: 's', destination });
    const span = trace.getTracer('t').startSpan('work');
    context.with(trace.setSpan(context.active(), span), () => {
      before.info('before');
      after.child({ component: 'c' }).info('inside');
    });
    after.info('outside');
    span.end();
    expect(lines.map((l) => [l.msg, l.traceId, l.spanId])).toEqual([
      ['before', undefined, undefined],
      ['inside', span.spanContext().traceId, span.spanContext().spanId],
      ['outside', undefined, undefined],
    ]);
    await tracing.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });
});
