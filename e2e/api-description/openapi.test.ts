import { generateKeyPairSync } from 'node:crypto';
import { validate, compileErrors } from '@readme/openapi-parser';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { createLogger, createRegistry } from '@community/observability';
import { buildServer, errorResponses, OPENAPI_PATH, readinessState } from '@community/service';
import {
  createTestDatabase,
  createTestVhost,
  testLogger,
  testOperators,
  testRedisPrefix,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createDemoService, loadDemoConfig } from '../../apps/demo-community-api/src';
import { createEmailService, loadEmailConfig } from '../../apps/email-service/src';
import { createFeedService, loadFeedConfig } from '../../apps/feed-service/src';
import { createNotificationService, loadNotificationConfig } from '../../apps/notification-service/src';
import { createPushService, loadPushConfig } from '../../apps/push-service/src';
import { createReconcilerService, loadReconcilerConfig } from '../../apps/reconciler/src';
import { coverage, servedRoutes, type OpenApiDocument } from './coverage';

/**
 * Every app's GET /openapi.json (docs/SERVICE-TEMPLATE.md "API description"): served without a
 * token, a valid OpenAPI 3.1 document (@readme/openapi-parser), and complete: every route the app's
 * router serves is an operation of the document, and (but for the demo API, whose response schemas
 * its owner adds) every operation describes its success answer. The apps are built by their own
 * builders, as main.ts does and the authorization matrix does, and nothing is started: building
 * consumes nothing.
 */
type AppName =
  'demo-community-api' | 'notification-service' | 'email-service' | 'feed-service' | 'push-service' | 'reconciler';
const APP_NAMES: readonly AppName[] = [
  'demo-community-api',
  'notification-service',
  'email-service',
  'feed-service',
  'push-service',
  'reconciler',
];
/** Apps whose every operation must describe its success answer. */
const WITH_RESPONSE_SCHEMAS = new Set<AppName>([
  'notification-service',
  'email-service',
  'feed-service',
  'push-service',
  'reconciler',
  'demo-community-api',
]);

const SECRET = 'openapi-secret-0123456789-abcdefghijklmnop';
const keys = generateKeyPairSync('ed25519');

let db: TestDatabase;
let vhost: TestVhost;
const services = new Map<AppName, { app: FastifyInstance; stop(): Promise<void> }>();
const documents = new Map<AppName, OpenApiDocument>();

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('openapi'), createTestVhost('openapi')]);
  const common = {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    JWT_SECRET: SECRET,
    ADMIN_KEYS: testOperators(['openapi-ops']).adminKeys,
    LOG_LEVEL: 'silent',
    FEED_REDIS_PREFIX: testRedisPrefix('openapi'),
  };
  const deps = (name: string) => ({ logger: testLogger(name), registry: new Registry() });
  const spki = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  services.set(
    'demo-community-api',
    createDemoService(loadDemoConfig({ ...common, DEMO_TRAFFIC_RATE: '0' }), deps('demo-community-api')),
  );
  services.set(
    'notification-service',
    createNotificationService(loadNotificationConfig({ ...common, EMAIL_SERVICE_VERIFY_KEY: spki }), {
      ...deps('notification-service'),
      messaging: false,
    }),
  );
  services.set(
    'email-service',
    createEmailService(
      loadEmailConfig({
        ...common,
        SMTP_URL: 'smtp://127.0.0.1:9',
        EMAIL_SERVICE_SIGNING_KEY: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      }),
      { ...deps('email-service'), runTicker: false },
    ),
  );
  services.set(
    'feed-service',
    createFeedService(loadFeedConfig(common), { ...deps('feed-service'), messaging: false }),
  );
  // Its messaging is built, not started (it has no `messaging: false`), and no poller runs.
  services.set(
    'push-service',
    createPushService(loadPushConfig(common), { ...deps('push-service'), runPoller: false }),
  );
  // With messaging (built, not started): the DLQ console's routes exist only then.
  services.set(
    'reconciler',
    createReconcilerService(loadReconcilerConfig({ ...common, BREAKER_METRICS_URLS: 'none' }), {
      ...deps('reconciler'),
      runScheduler: false,
    }),
  );
  for (const [name, svc] of services) {
    await svc.app.ready();
    // No Authorization header: the description is public.
    const res = await svc.app.inject({ method: 'GET', url: OPENAPI_PATH });
    if (res.statusCode !== 200) throw new Error(`${name} GET ${OPENAPI_PATH}: ${res.statusCode} ${res.body}`);
    documents.set(name, res.json<OpenApiDocument>());
  }
}, 60_000);

afterAll(async () => {
  for (const svc of services.values()) {
    await svc.stop();
    await svc.app.close();
  }
  await Promise.all([db?.drop(), vhost?.delete()]);
});

const documentOf = (name: AppName): OpenApiDocument => {
  const document = documents.get(name);
  if (!document) throw new Error(`no document for ${name}`);
  return document;
};
const appOf = (name: AppName): FastifyInstance => {
  const svc = services.get(name);
  if (!svc) throw new Error(`no app ${name}`);
  return svc.app;
};

describe.each(APP_NAMES)('%s GET /openapi.json', (name) => {
  it('is a valid OpenAPI 3.1 document with the bearer token schemes', async () => {
    const document = documentOf(name);
    expect(document.openapi).toBe('3.1.0');
    // validate() dereferences in place: give it a copy.
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? 'valid' : compileErrors(result)).toBe('valid');
    expect(Object.keys(document.components?.securitySchemes ?? {}).sort()).toEqual([
      'adminToken',
      'serviceToken',
      'userToken',
    ]);
  });

  it('describes every route the app serves, and no route it does not', () => {
    const routes = servedRoutes(name, appOf(name));
    expect(routes.length).toBeGreaterThan(3); // the ops routes at least: the walk found the router
    const found = coverage(routes, documentOf(name));
    expect({ undocumented: found.undocumented, stale: found.stale }).toEqual({ undocumented: [], stale: [] });
    if (WITH_RESPONSE_SCHEMAS.has(name)) expect(found.withoutResponseSchema).toEqual([]);
  });
});

it('an admin or user route carries the security of its guard; the ops routes none', () => {
  const ops = (name: AppName, method: string, path: string) =>
    (documentOf(name).paths?.[path]?.[method] as { security?: unknown } | undefined)?.security;
  expect(ops('notification-service', 'get', '/v1/users/{userId}/notifications')).toEqual([
    { userToken: [] },
    { adminToken: [] },
  ]);
  expect(ops('notification-service', 'put', '/v1/users/{userId}/preferences')).toEqual([
    { userToken: [] },
    { adminToken: [] },
    { serviceToken: ['preferences:opt-out'] },
  ]);
  expect(ops('reconciler', 'get', '/v1/admin/status')).toEqual([{ adminToken: [] }]);
  // A DLQ route's guard is its scope's hook: the route says so itself.
  expect(ops('reconciler', 'post', '/v1/admin/dlq/replay')).toEqual([{ adminToken: [] }]);
  expect(ops('push-service', 'post', '/v1/users/{userId}/push-subscriptions')).toEqual([
    { userToken: [] },
    { adminToken: [] },
  ]);
  expect(ops('push-service', 'delete', '/v1/users/{userId}/push-subscriptions')).toEqual([
    { userToken: [] },
    { adminToken: [] },
  ]);
  expect(ops('email-service', 'get', '/v1/unsubscribe')).toBeUndefined();
  expect(ops('push-service', 'get', '/v1/push/vapid-public-key')).toBeUndefined();
  expect(ops('push-service', 'get', '/push/')).toBeUndefined();
  expect(ops('feed-service', 'get', '/healthz')).toBeUndefined();
});

it('the SSE stream is described as text/event-stream', () => {
  const stream = documentOf('notification-service').paths?.['/v1/users/{userId}/notifications/stream']?.['get'];
  expect(Object.keys(stream?.responses?.['200']?.content ?? {})).toEqual(['text/event-stream']);
});

describe('the coverage check', () => {
  // It must fail when a route is served but missing from the document: a hidden route, and one
  // without a response schema, on a server built like every app's.
  let app: FastifyInstance;
  beforeAll(async () => {
    app = buildServer({
      logger: createLogger({ service: 'coverage-probe', level: 'silent' }),
      registry: createRegistry({ service: 'coverage-probe' }),
      readiness: readinessState().checks,
    });
    app.get(
      '/v1/described/:id',
      { schema: { response: { 200: Type.Object({ id: Type.String() }), ...errorResponses(404) } } },
      async () => ({ id: 'x' }),
    );
    app.get('/v1/hidden', { schema: { hide: true } }, async () => ({}));
    app.post('/v1/undescribed', async () => ({}));
    // No content, by definition: its status is the whole answer.
    app.delete(
      '/v1/described/:id',
      { schema: { response: { 204: Type.Null({ description: 'Removed' }), ...errorResponses(404) } } },
      async (_request, reply) => reply.code(204).send(),
    );
    await app.ready();
  });
  afterAll(() => app.close());

  it('names the route missing from the document and the operation without a response schema', async () => {
    const document = (await app.inject({ method: 'GET', url: OPENAPI_PATH })).json<OpenApiDocument>();
    expect(coverage(servedRoutes('probe', app), document)).toEqual({
      undocumented: ['GET /v1/hidden'],
      stale: [],
      withoutResponseSchema: ['POST /v1/undescribed'],
    });
    expect(document.paths?.['/v1/described/{id}']?.['get']).toBeDefined();
  });
});
