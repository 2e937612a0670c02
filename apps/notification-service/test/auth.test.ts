import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { testLogger } from '@community/testing';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { BATCH_TIMEOUT_MS } from '../src/queues';
import { batchItems, JWT_SECRET, mention, startHarness, type Harness } from './harness';

/**
 * Authorization matrix: every inbox endpoint × every kind of caller. 401 without a valid token,
 * 403 for another user's inbox, 200 for the owner and for an admin.
 */
let h: Harness;
let port: number;
const owner = `u-${randomUUID()}`;
let notificationId: string;

beforeAll(async () => {
  h = await startHarness('auth', { amqp: false });
  const handle = createNotificationBatchHandler({ pool: h.pool, consumer: 'test', metrics: h.metrics, batchTimeoutMs: BATCH_TIMEOUT_MS });
  await handle(batchItems([mention('c-1', 'actor-1', owner)]), { logger: testLogger(), signal: new AbortController().signal, queue: 't', handler: 't' });
  notificationId = (await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1', [owner])).rows[0].id;
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(async () => h.close());

const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
function craft(payload: object, { alg = 'HS256', secret = JWT_SECRET } = {}): string {
  const head = `${b64({ alg, typ: 'JWT' })}.${b64(payload)}`;
  if (alg === 'none') return `${head}.`;
  const hash = alg === 'HS512' ? 'sha512' : 'sha256';
  return `${head}.${createHmac(hash, secret).update(head).digest('base64url')}`;
}
const now = () => Math.floor(Date.now() / 1000);

const callers: Array<[string, number, string | undefined]> = [
  ['no Authorization header', 401, undefined],
  ['a malformed header', 401, 'Token abc'],
  ['a garbage token', 401, 'Bearer not.a.jwt'],
  ['a token signed with another secret', 401, `Bearer ${craft({ sub: owner }, { secret: 'someone-elses-secret-0123456789' })}`],
  ['an expired token', 401, `Bearer ${craft({ sub: owner, exp: now() - 60 })}`],
  ['an unsigned token (alg none)', 401, `Bearer ${craft({ sub: owner, scope: 'admin' }, { alg: 'none' })}`],
  ['a token signed with HS512', 401, `Bearer ${craft({ sub: owner }, { alg: 'HS512' })}`],
  ['a token without sub', 401, `Bearer ${craft({ scope: 'admin' })}`],
  ['another user', 403, `Bearer ${craft({ sub: 'u-intruder', scope: 'read write' })}`],
  ['the owner', 200, `Bearer ${craft({ sub: owner, exp: now() + 600 })}`],
  ['an admin (space-separated scope)', 200, `Bearer ${craft({ sub: 'u-ops', scope: 'read admin' })}`],
  ['an admin (scope array)', 200, `Bearer ${craft({ sub: 'u-ops', scope: ['admin'] })}`],
];

const endpoints: Array<[string, 'GET' | 'POST' | 'PUT', () => string, object?]> = [
  ['list', 'GET', () => `/v1/users/${owner}/notifications`],
  ['unread-count', 'GET', () => `/v1/users/${owner}/notifications/unread-count`],
  ['read', 'POST', () => `/v1/users/${owner}/notifications/${notificationId}/read`],
  ['unread', 'POST', () => `/v1/users/${owner}/notifications/${notificationId}/unread`],
  ['read-all', 'POST', () => `/v1/users/${owner}/notifications/read-all`],
  ['get preferences', 'GET', () => `/v1/users/${owner}/preferences`],
  ['put preferences', 'PUT', () => `/v1/users/${owner}/preferences`, { preferences: { follow: { email: 'digest' } } }],
];

describe.each(endpoints)('%s', (_name, method, url, payload) => {
  it.each(callers)('%s → %s', async (_who, status, authorization) => {
    const res = await h.app.inject({ method, url: url(), headers: authorization ? { authorization } : {}, ...(payload ? { payload } : {}) });
    expect(res.statusCode).toBe(status);
    if (status !== 200) expect(res.json()).toMatchObject({ statusCode: status, error: expect.any(String), message: expect.any(String) });
    if (status === 403) expect(res.json().message).toContain(`may not access the notifications of user '${owner}'`);
  });
});

/** The stream answers over a real socket (it never ends); only the status line and headers matter here. */
function streamStatus(authorization: string | undefined): Promise<{ status: number; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, host: '127.0.0.1', path: `/v1/users/${owner}/notifications/stream`, headers: authorization ? { authorization } : {} }, (res) => {
      resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] });
      req.destroy();
    });
    req.on('error', reject);
  });
}

describe('stream', () => {
  it.each(callers)('%s → %s', async (_who, status, authorization) => {
    const res = await streamStatus(authorization);
    expect(res.status).toBe(status);
    if (status === 200) expect(res.type).toMatch(/^text\/event-stream/);
  });
});

describe('a user id no inbox can have', () => {
  const admin = `Bearer ${craft({ sub: 'u-ops', scope: 'admin' })}`;
  it.each([
    ['NUL', 'a%00b'],
    ['only NUL', '%00'],
  ])('answers 400 to an admin, not a database error (%s)', async (_what, user) => {
    for (const [, method, url, payload] of endpoints) {
      const res = await h.app.inject({ method, url: url().replace(owner, user), headers: { authorization: admin }, ...(payload ? { payload } : {}) });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/^params\/userId must/);
    }
  });
});
