import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { testLogger, tokenForms, type TokenFormKind } from '@community/testing';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { BATCH_TIMEOUT_MS } from '../src/queues';
import { batchItems, JWT_SECRET, mention, OPERATORS, startHarness, type Harness } from './harness';

/**
 * Authorization matrix: every inbox endpoint × every form of token (libs/testing `tokenForms`). 401
 * without a valid token (wrong iss/aud, no exp, too long a life, an unknown kid, …), 403 for another
 * user's inbox, 200 for the owner and for an operator's admin token.
 */
let h: Harness;
let port: number;
const owner = `u-${randomUUID()}`;
let notificationId: string;

beforeAll(async () => {
  h = await startHarness('auth', { amqp: false });
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: 'test',
    metrics: h.metrics,
    batchTimeoutMs: BATCH_TIMEOUT_MS,
  });
  await handle(batchItems([mention('c-1', 'actor-1', owner)]), {
    logger: testLogger(),
    signal: new AbortController().signal,
    queue: 't',
    handler: 't',
  });
  notificationId = (await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1', [owner])).rows[0].id;
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(async () => h.close());

/** User routes: the owner and an operator pass; another user is 403, even with an admin scope in an HS256 token. */
const STATUS: Record<TokenFormKind, number> = {
  invalid: 401,
  owner: 200,
  'other-user': 403,
  'other-user-with-admin-scope': 403,
  operator: 200,
};
const callers = tokenForms({ secret: JWT_SECRET, service: 'notification-service', operators: OPERATORS, owner }).map(
  ([who, kind, authorization]) => [who, STATUS[kind], authorization] as const,
);

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
    const res = await h.app.inject({
      method,
      url: url(),
      headers: authorization ? { authorization } : {},
      ...(payload ? { payload } : {}),
    });
    expect(res.statusCode).toBe(status);
    if (status !== 200)
      expect(res.json()).toMatchObject({ statusCode: status, error: expect.any(String), message: expect.any(String) });
    if (status === 403)
      expect(res.json().message).toContain(
        `may not access the notifications of user '${owner}' (an operator's admin token required)`,
      );
  });
});

/** The stream answers over a real socket (it never ends); only the status line and headers matter here. */
function streamStatus(authorization: string | undefined): Promise<{ status: number; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        port,
        host: '127.0.0.1',
        path: `/v1/users/${owner}/notifications/stream`,
        headers: authorization ? { authorization } : {},
      },
      (res) => {
        resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] });
        req.destroy();
      },
    );
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
  const admin = `Bearer ${OPERATORS.token('u-ops', 'notification-service')}`;
  it.each([
    ['NUL', 'a%00b'],
    ['only NUL', '%00'],
  ])('answers 400 to an admin, not a database error (%s)', async (_what, user) => {
    for (const [, method, url, payload] of endpoints) {
      const res = await h.app.inject({
        method,
        url: url().replace(owner, user),
        headers: { authorization: admin },
        ...(payload ? { payload } : {}),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/^params\/userId must/);
    }
  });
});
