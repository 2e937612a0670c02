import type { FastifyInstance } from 'fastify';
import { createLogger } from '@community/observability';
import { createRegistry } from '@community/observability';
import { readinessState, type ReadinessProbe } from './readiness';
import { buildServer, type ServerOptions } from './server';

function setup(readiness: ReadinessProbe, extra: Partial<ServerOptions> = {}, level: 'info' | 'debug' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    service: 'test-service',
    level,
    destination: { write: (s: string) => lines.push(JSON.parse(s)) },
  });
  const registry = createRegistry({ service: 'test-service' });
  const app = buildServer({ logger, registry, readiness, ...extra });
  return { app, lines, registry };
}

describe('buildServer ops routes', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('GET /healthz answers 200 { status: ok } without consulting readiness', async () => {
    const readiness = jest.fn(() => ({ amqp: false }));
    ({ app } = setup(readiness));
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(readiness).not.toHaveBeenCalled();
  });

  it('GET /readyz answers 200 with the checks when all pass', async () => {
    const state = readinessState();
    state.set('amqp', true);
    state.set('database', true);
    ({ app } = setup(state.checks));
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { accepting: true, amqp: true, database: true } });
  });

  it('GET /readyz answers 503 naming the failing check, and after shutdown starts', async () => {
    const state = readinessState({ amqp: true, database: false });
    ({ app } = setup(state.checks));
    let res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'not_ready', checks: { amqp: true, database: false, accepting: true } });

    state.set('database', true);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    state.markShuttingDown();
    res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'not_ready', checks: { amqp: true, database: true, accepting: false } });
  });

  it('GET /readyz accepts an async probe and treats a failing or hanging one as not ready', async () => {
    ({ app } = setup(async () => ({ redis: true })));
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'ready',
      checks: { redis: true },
    });
    await app.close();

    ({ app } = setup(async () => Promise.reject(new Error('db down'))));
    let res = await app.inject({ method: 'GET', url: '/readyz' });
    expect([res.statusCode, res.json()]).toEqual([503, { status: 'not_ready', checks: {} }]);
    await app.close();

    ({ app } = setup(() => new Promise(() => undefined), { readinessTimeoutMs: 20 }));
    res = await app.inject({ method: 'GET', url: '/readyz' });
    expect([res.statusCode, res.json()]).toEqual([503, { status: 'not_ready', checks: {} }]);
  });

  it('GET /metrics serves Prometheus text with default process metrics labelled by service', async () => {
    ({ app } = setup(() => ({})));
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    expect(res.body).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(res.body).toMatch(/^process_cpu_user_seconds_total\{service="test-service"\} [\d.e+-]+$/m);
    expect(res.body).toMatch(/^nodejs_heap_size_used_bytes\{service="test-service"\} \d+/m);
  });

  it('logs no request at info; at debug one line per app request, none for the ops routes', async () => {
    let lines: Record<string, unknown>[];
    ({ app, lines } = setup(() => ({})));
    app.get('/v1/thing', async () => ({ ok: true }));
    await app.inject({ method: 'GET', url: '/v1/thing' });
    expect(lines.filter((l) => /request/.test(String(l['msg'])))).toEqual([]);
    await app.close();

    ({ app, lines } = setup(() => ({}), {}, 'debug'));
    app.get('/v1/thing', async () => ({ ok: true }));
    for (const url of ['/healthz', '/readyz', '/metrics']) await app.inject({ method: 'GET', url });
    await app.inject({ method: 'GET', url: '/v1/thing?token=capability-secret' });
    const logged = lines.filter((l) => /request/.test(String(l['msg'])));
    // The URL is redacted like every logged string (an unsubscribe link carries a capability token).
    expect(logged).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'request completed',
        service: 'test-service',
        req: { method: 'GET', url: '/v1/thing?token=[REDACTED]' },
        res: { statusCode: 200 },
      }),
    ]);
  });

  it("keeps fastify's error shape, and answers a crash without its text, under a request id", async () => {
    ({ app } = setup(() => ({})));
    app.get('/boom', async () => {
      throw new Error('kaput');
    });
    const missing = await app.inject({ method: 'GET', url: '/nope' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ statusCode: 404, error: 'Not Found' });
    const boom = await app.inject({ method: 'GET', url: '/boom' });
    expect(boom.json()).toEqual({
      statusCode: 500,
      code: 'INTERNAL_ERROR',
      error: 'Internal Server Error',
      message: expect.stringContaining('logged under this request id'),
    });
    expect(boom.body).not.toContain('kaput');
    expect(boom.headers['x-request-id']).toEqual(expect.any(String));
  });
});
