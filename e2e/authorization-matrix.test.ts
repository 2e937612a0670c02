import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { DEV_ADMIN_KEY_ID, DEV_ADMIN_SIGNING_KEY } from '@community/config';
import { adminTokenSigner, serviceTokenSigner } from '@community/service';
import {
  craftToken,
  createTestDatabase,
  createTestVhost,
  testLogger,
  testOperators,
  testRedisPrefix,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createDemoService, loadDemoConfig } from '../apps/demo-community-api/src';
import { createEmailService, loadEmailConfig } from '../apps/email-service/src';
import { createFeedService, loadFeedConfig } from '../apps/feed-service/src';
import { createNotificationService, loadNotificationConfig } from '../apps/notification-service/src';
import { createPushService, loadPushConfig } from '../apps/push-service/src';
import { createReconcilerService, loadReconcilerConfig } from '../apps/reconciler/src';
import { matrixRows, parseRouteTree, type MatrixRow, type Route } from './authorization-matrix/table';

/**
 * The authorization matrix (docs/SECURITY.md "Authorization matrix"): every route of every app, as
 * each app's own route table lists it after `ready()` (fastify's printRoutes, cross-checked with
 * hasRoute), called by every principal, against the one table of expected results in
 * docs/SECURITY.md. A route without a row fails, a row without a route fails, a cell that differs
 * fails. The apps are built by their own builders (as main.ts does) and listen on a port: every
 * request goes through the real onRequest hooks. Nothing is started (no consumer, no relay, no
 * scheduler): a request that auth lets through may answer 400, 404 or 503, which is still "ok".
 */
const SECURITY_MD = path.join(__dirname, '..', 'docs', 'SECURITY.md');
const SECRET = 'matrix-secret-0123456789-abcdefghijklmnop';
const OPERATOR = 'matrix-ops';
const OPERATORS = testOperators([OPERATOR]);
const OWNER = 'matrix-owner';
const OTHER = 'matrix-other';
const ALERTS_ISSUER = 'community-platform';
const emailKeys = generateKeyPairSync('ed25519');
const alertKeys = generateKeyPairSync('ed25519');
const spki = (k: typeof emailKeys.publicKey) => k.export({ type: 'spki', format: 'pem' }).toString();
const pkcs8 = (k: typeof emailKeys.privateKey) => k.export({ type: 'pkcs8', format: 'pem' }).toString();

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

/** The columns of the table, in its order: what each principal sends (headers), for the app called. */
const now = () => Math.floor(Date.now() / 1000);
const userToken = (claims: Record<string, unknown>) =>
  craftToken(
    { alg: 'HS256', typ: 'JWT' },
    { iss: 'community-site', aud: 'community-notifications', iat: now(), exp: now() + 600, ...claims },
    { secret: SECRET },
  );
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const PRINCIPALS: ReadonlyArray<[string, (app: AppName) => Record<string, string>]> = [
  ['none', () => ({})],
  ['expired', () => bearer(userToken({ sub: OWNER, iat: now() - 700, exp: now() - 60 }))],
  ['wrong-aud', () => bearer(userToken({ sub: OWNER, aud: 'another-app' }))],
  ['wrong-iss', () => bearer(userToken({ sub: OWNER, iss: 'elsewhere' }))],
  ['x-user-id', () => ({ 'x-user-id': OWNER })],
  ['user', () => bearer(userToken({ sub: OWNER }))],
  ['other-user', () => bearer(userToken({ sub: OTHER }))],
  // What an admin token used to be (HS256, scope admin), here another user's: the scope grants nothing.
  ['user-admin-scope', () => bearer(userToken({ sub: OTHER, scope: 'admin' }))],
  ['admin', (app) => bearer(OPERATORS.token(OPERATOR, app))],
  [
    'admin-wrong-aud',
    (app) => bearer(OPERATORS.token(OPERATOR, app === 'reconciler' ? 'notification-service' : 'reconciler')),
  ],
  // The development operator's key, committed to the repository: no deployment's ADMIN_KEYS holds it.
  [
    'admin-dev-key',
    (app) => bearer(adminTokenSigner({ signingKey: DEV_ADMIN_SIGNING_KEY, kid: DEV_ADMIN_KEY_ID, audience: app })()),
  ],
  [
    'svc-email',
    () =>
      bearer(
        serviceTokenSigner({
          signingKey: emailKeys.privateKey,
          issuer: 'email-service',
          audience: 'notification-service',
          scope: 'preferences:opt-out',
        })(),
      ),
  ],
  [
    'svc-alerts',
    () =>
      bearer(
        serviceTokenSigner({
          signingKey: alertKeys.privateKey,
          issuer: ALERTS_ISSUER,
          audience: 'demo-community-api',
          scope: 'security-alerts:raise',
        })(),
      ),
  ],
];

let db: TestDatabase;
/** The demo API's own: an operator's erasure (reconciler) of a matrix user must not remove the demo API's actor. */
let demoDb: TestDatabase;
let vhost: TestVhost;
const apps = new Map<AppName, { app: FastifyInstance; url: string; close: () => Promise<void> }>();
let routes: Route[];
function appOf(name: string): { app: FastifyInstance; url: string } {
  const a = apps.get(name as AppName);
  if (!a) throw new Error(`no app ${name}`);
  return a;
}
let rows: MatrixRow[];

beforeAll(async () => {
  [db, demoDb, vhost] = await Promise.all([
    createTestDatabase('authz_matrix'),
    createTestDatabase('authz_matrix_demo'),
    createTestVhost('authz-matrix'),
  ]);
  const common = {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    JWT_SECRET: SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SHUTDOWN_TIMEOUT_MS: '3000',
    FEED_REDIS_PREFIX: testRedisPrefix('authz'),
  };
  const deps = (name: string) => ({ logger: testLogger(name), registry: new Registry() });
  const services: Record<AppName, { app: FastifyInstance; stop(): Promise<void> }> = {
    // Production mode: x-user-id refused, writes need tokens, alerts a service token (docs/SECURITY.md).
    'demo-community-api': createDemoService(
      loadDemoConfig({
        ...common,
        DATABASE_URL: demoDb.url,
        NODE_ENV: 'production',
        SECURITY_ALERTS_ISSUER: ALERTS_ISSUER,
        SECURITY_ALERTS_VERIFY_KEY: spki(alertKeys.publicKey),
        DEMO_TRAFFIC_RATE: '0',
        DEMO_WRITE_RATE_LIMIT: '1000000',
      }),
      deps('demo-community-api'),
    ),
    'notification-service': createNotificationService(
      loadNotificationConfig({ ...common, EMAIL_SERVICE_VERIFY_KEY: spki(emailKeys.publicKey) }),
      { ...deps('notification-service'), messaging: false },
    ),
    'email-service': createEmailService(
      loadEmailConfig({
        ...common,
        SMTP_URL: 'smtp://127.0.0.1:9',
        EMAIL_SERVICE_SIGNING_KEY: pkcs8(emailKeys.privateKey),
      }),
      { ...deps('email-service'), runTicker: false },
    ),
    'feed-service': createFeedService(loadFeedConfig(common), { ...deps('feed-service'), messaging: false }),
    // Its messaging is built but not started (no `messaging: false`), and no poller runs.
    'push-service': createPushService(loadPushConfig(common), { ...deps('push-service'), runPoller: false }),
    // With messaging (built, not started): the DLQ console's routes exist only then.
    reconciler: createReconcilerService(loadReconcilerConfig({ ...common, BREAKER_METRICS_URLS: 'none' }), {
      ...deps('reconciler'),
      runScheduler: false,
    }),
  };
  for (const name of APP_NAMES) {
    const svc = services[name];
    const url = await svc.app.listen({ port: 0, host: '127.0.0.1' });
    apps.set(name, {
      app: svc.app,
      url,
      close: async () => {
        await svc.stop();
        await svc.app.close();
      },
    });
  }
  routes = APP_NAMES.flatMap((name) => parseRouteTree(name, appOf(name).app.printRoutes({ commonPrefix: false })));
  // The parse is checked against the router itself: a misread line names a route that is not there.
  for (const r of routes)
    if (!appOf(r.app).app.hasRoute({ method: r.method as 'GET', url: r.url }))
      throw new Error(`parsed ${r.app} ${r.method} ${r.url}, which its router does not have`);
  rows = matrixRows(readFileSync(SECURITY_MD, 'utf8'));
  // The community users the tokens name, so that a write the guards let through meets a known actor
  // (the operator is no community user: the demo API's user writes need one, docs/SECURITY.md).
  for (const id of [OWNER, OTHER]) {
    const res = await fetch(`${appOf('demo-community-api').url}/v1/users`, {
      method: 'POST',
      headers: { ...bearer(OPERATORS.token(OPERATOR, 'demo-community-api')), 'content-type': 'application/json' },
      body: JSON.stringify({ id, email: `${id}@example.test`, displayName: id }),
    });
    if (res.status !== 201) throw new Error(`creating ${id}: ${res.status} ${await res.text()}`);
  }
}, 60_000);

afterAll(async () => {
  for (const a of apps.values()) await a.close();
  await Promise.all([db?.drop(), demoDb?.drop(), vhost?.delete()]);
});

const rowKey = (app: string, method: string, url: string) => `${app} ${method} ${url}`;
function rowFor(route: Route): MatrixRow | undefined {
  return rows.find((r) => rowKey(r.app, r.method, r.route) === rowKey(route.app, route.method, route.url));
}

it('docs/SECURITY.md has one row per route of every app, and no row for a route that does not exist', () => {
  expect(routes.length).toBeGreaterThan(30);
  expect(new Set(routes.map((r) => r.app))).toEqual(new Set(APP_NAMES));
  const missing = routes.filter((r) => !rowFor(r));
  const stale = rows.filter(
    (row) => !routes.some((r) => rowKey(r.app, r.method, r.url) === rowKey(row.app, row.method, row.route)),
  );
  const twice = rows.filter(
    (row, i) =>
      rows.findIndex((o) => rowKey(o.app, o.method, o.route) === rowKey(row.app, row.method, row.route)) !== i,
  );
  expect({
    missing: missing.map((r) => rowKey(r.app, r.method, r.url)),
    stale: stale.map((r) => rowKey(r.app, r.method, r.route)),
    twice: twice.map((r) => rowKey(r.app, r.method, r.route)),
  }).toEqual({ missing: [], stale: [], twice: [] });
});

it('the table has one column per principal this test sends, in its order', () => {
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) expect(Object.keys(row.cells)).toEqual(PRINCIPALS.map(([name]) => name));
});

it('every route answers every principal as its row says (ok: neither 401 nor 403)', async () => {
  const concrete = (url: string) =>
    url
      .replace(/:userId/g, OWNER)
      .replace(/:[A-Za-z]+/g, '1')
      .replace(/\*/g, 'x');
  const cells = routes.flatMap((route) =>
    PRINCIPALS.map(([principal, headers]) => ({ route, principal, headers: headers(route.app as AppName) })),
  );
  const wrong: string[] = [];
  const observed = new Map<string, string[]>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < cells.length) {
        const { route, principal, headers } = cells[next++];
        const body = ['POST', 'PUT', 'PATCH'].includes(route.method);
        // Made-up input, so that a call the guards let through ends in the route's own validation and
        // changes nothing: a JSON array (no route's body schema accepts one), and a Last-Event-ID
        // that is no number (the SSE route refuses it with a 400 instead of opening a stream).
        const input = {
          ...headers,
          'last-event-id': 'not-a-number',
          ...(body ? { 'content-type': 'application/json' } : {}),
        };
        const status = await call(
          `${appOf(route.app).url}${concrete(route.url)}`,
          route.method,
          input,
          body ? '[]' : undefined,
        );
        const got = status === 401 || status === 403 ? String(status) : 'ok';
        const key = rowKey(route.app, route.method, route.url);
        observed.set(key, [...(observed.get(key) ?? []), `${principal}=${status}`]);
        const want = rowFor(route)?.cells[principal];
        if (want !== undefined && want !== got)
          wrong.push(`${key} as ${principal}: the table says ${want}, got ${status}`);
        // Let through, the made-up input must still meet an answer: 503 is a dependency this test
        // does not start (readiness), any other 5xx a route that broke on it.
        else if (status >= 500 && status !== 503) wrong.push(`${key} as ${principal}: answered ${status}`);
      }
    }),
  );
  // AUTHZ_MATRIX_OBSERVED=<file> writes what was observed as table rows: a draft for a new route's
  // row, to be checked cell by cell against what the route is for before it goes in the table.
  if (process.env.AUTHZ_MATRIX_OBSERVED) {
    const lines = [...observed].map(([key, answers]) => {
      const [app, method, url] = key.split(' ');
      const byPrincipal = new Map(answers.map((a) => a.split('=') as [string, string]));
      return `| ${app} | ${method} | \`${url}\` | ${PRINCIPALS.map(([p]) => (['401', '403'].includes(byPrincipal.get(p) ?? '') ? byPrincipal.get(p) : 'ok')).join(' | ')} |`;
    });
    writeFileSync(process.env.AUTHZ_MATRIX_OBSERVED, `${lines.join('\n')}\n`);
  }
  expect(wrong).toEqual([]);
}, 120_000);

/** The status of one request (its body is not read). */
async function call(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<number> {
  const controller = new AbortController();
  try {
    const res = await fetch(url, { method, headers, body, redirect: 'manual', signal: controller.signal });
    return res.status;
  } finally {
    controller.abort();
  }
}
