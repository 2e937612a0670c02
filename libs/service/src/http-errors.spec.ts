import Fastify, { type FastifyInstance } from 'fastify';
import { createLogger } from '@community/observability';
import { createRegistry } from '@community/observability';
import { CodedHttpError, defineErrors } from './http-errors';
import { buildServer } from './server';

const ERRORS = defineErrors('T_', {
  NOT_FOUND: { statusCode: 404, message: (id: string) => `thing '${id}' does not exist` },
  CONFLICT: { statusCode: 409, message: 'already there' },
  BROKEN: { statusCode: 503, message: (what: string, why: string) => `${what} is unavailable: ${why}` },
});

function server(): FastifyInstance {
  const lines: string[] = [];
  const logger = createLogger({ service: 'test-service', destination: { write: (s: string) => lines.push(s) } });
  const app = buildServer({
    logger,
    registry: createRegistry({ service: 'test-service' }),
    readiness: () => ({ ok: true }),
  });
  app.get('/thing/:id', async (request) => {
    throw ERRORS.NOT_FOUND((request.params as { id: string }).id);
  });
  app.get('/crash', async () => {
    throw new Error('boom');
  });
  app.get(
    '/validated',
    { schema: { querystring: { type: 'object', required: ['q'], properties: { q: { type: 'string' } } } } },
    async () => 'ok',
  );
  return app;
}

describe('defineErrors', () => {
  it('prefixes each key into a unique wire code and words the message from the arguments', () => {
    expect(ERRORS.NOT_FOUND('a"b')).toMatchObject({
      statusCode: 404,
      code: 'T_NOT_FOUND',
      message: `thing 'a"b' does not exist`,
    });
    expect(ERRORS.CONFLICT()).toMatchObject({ statusCode: 409, code: 'T_CONFLICT', message: 'already there' });
    expect(ERRORS.BROKEN('smtp', 'down')).toMatchObject({ statusCode: 503, message: 'smtp is unavailable: down' });
    expect(ERRORS.NOT_FOUND('x')).toBeInstanceOf(CodedHttpError);
  });

  it('refuses a status that is not an HTTP error at definition time', () => {
    expect(() => defineErrors('T_', { OK: { statusCode: 200, message: 'fine' } })).toThrow(
      "error 'T_OK': statusCode 200 is not an HTTP error status (400-599)",
    );
  });

  it('withCode keeps status and message under another code', () => {
    expect(ERRORS.CONFLICT().withCode('FST_OTHER')).toMatchObject({
      statusCode: 409,
      code: 'FST_OTHER',
      message: 'already there',
    });
  });
});

describe('the error handler buildServer installs', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('answers a catalogue error with the contract body, byte for byte what fastify itself sends', async () => {
    app = server();
    const ours = await app.inject({ method: 'GET', url: '/thing/%C3%A9%22%5C' });
    // The same error through a bare fastify, whose default handler serialises { statusCode, code, error, message }.
    const bare = Fastify();
    bare.get('/thing/:id', async (request) => {
      throw ERRORS.NOT_FOUND((request.params as { id: string }).id);
    });
    const theirs = await bare.inject({ method: 'GET', url: '/thing/%C3%A9%22%5C' });
    await bare.close();
    expect(ours.statusCode).toBe(404);
    expect(ours.body).toBe(
      '{"statusCode":404,"code":"T_NOT_FOUND","error":"Not Found","message":"thing \'é\\"\\\\\' does not exist"}',
    );
    expect(ours.body).toBe(theirs.body);
    expect(ours.headers['content-type']).toBe(theirs.headers['content-type']);
  });

  it("leaves fastify's own client errors to fastify (validation 400, unknown route 404) and answers a crash 500 without its text", async () => {
    app = server();
    const invalid = await app.inject({ method: 'GET', url: '/validated' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toEqual({
      statusCode: 400,
      code: 'FST_ERR_VALIDATION',
      error: 'Bad Request',
      message: "querystring must have required property 'q'",
    });
    const missing = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.json()).toEqual({ statusCode: 404, error: 'Not Found', message: 'Route GET:/nowhere not found' });
    const crash = await app.inject({ method: 'GET', url: '/crash' });
    expect(crash.statusCode).toBe(500);
    expect(crash.json()).toEqual({
      statusCode: 500,
      code: 'INTERNAL_ERROR',
      error: 'Internal Server Error',
      message: expect.stringContaining('logged under this request id'),
    });
    expect(crash.body).not.toContain('boom');
  });

  it('answers an unavailable dependency 503 with Retry-After and the contract body; other errors keep their status', async () => {
    const lines: string[] = [];
    const logger = createLogger({ service: 'test-service', destination: { write: (s: string) => lines.push(s) } });
    const fake = (err: unknown) => ((err as { code?: unknown }).code === 'FAKE_DOWN' ? 'queue' : undefined);
    app = buildServer({
      logger,
      registry: createRegistry({ service: 'test-service' }),
      readiness: () => ({ ok: true }),
      dependencyErrors: [fake],
      retryAfterSeconds: 7,
    });
    app.get('/fake', async () => {
      throw Object.assign(new Error('queue said no'), { code: 'FAKE_DOWN' });
    });
    app.get('/refused', async () => {
      throw new Error('wrapped', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      });
    });
    app.get('/client-fault', async () => {
      // a 4xx fastify error that happens to carry a socket code stays the client's
      throw Object.assign(new Error('bad'), { statusCode: 400, code: 'ECONNRESET' });
    });
    app.get('/crash', async () => {
      throw new Error('boom');
    });
    const fakeRes = await app.inject({ url: '/fake' });
    expect(fakeRes.statusCode).toBe(503);
    expect(fakeRes.headers['retry-after']).toBe('7');
    expect(fakeRes.json()).toEqual({
      statusCode: 503,
      code: 'DEPENDENCY_UNAVAILABLE',
      error: 'Service Unavailable',
      message: 'queue is unavailable for the moment; retry after 7 s',
    });
    const refused = await app.inject({ url: '/refused' });
    expect(refused.statusCode).toBe(503);
    expect(refused.json().message).toBe('dependency is unavailable for the moment; retry after 7 s');
    expect((await app.inject({ url: '/client-fault' })).statusCode).toBe(400);
    const crash = await app.inject({ url: '/crash' });
    expect(crash.statusCode).toBe(500);
    expect(crash.headers['retry-after']).toBeUndefined();
    expect(crash.body).not.toContain('boom');
    // The crash itself is in the log, under the request id the response carries.
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.code === 'INTERNAL_ERROR');
    expect(logged).toMatchObject({ level: 'error', err: expect.objectContaining({ message: 'boom' }) });
    expect(lines.some((l) => JSON.parse(l).level === 'warn' && JSON.parse(l).dependency === 'queue')).toBe(true);
  });

  it('refuses a Retry-After that is not whole seconds at build time', () => {
    const logger = createLogger({ service: 'test-service', destination: { write: () => undefined } });
    expect(() =>
      buildServer({
        logger,
        registry: createRegistry({ service: 't' }),
        readiness: () => ({}),
        retryAfterSeconds: 1.5,
      }),
    ).toThrow('retryAfterSeconds must be a whole number');
  });
});
