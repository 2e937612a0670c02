import { createECDH, randomBytes } from 'node:crypto';
import { bearer, startHarness, type Harness } from './support/harness';

// The subscriptions API: validation with reasons, 201/200, the per-user limit, who may call, DELETE.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('subs', { PUSH_MAX_SUBSCRIPTIONS_PER_USER: '2' });
}, 60_000);
afterAll(async () => h?.close());

let n = 0;
const browser = (endpoint = `https://push.example/send/${++n}`) => ({
  endpoint,
  expirationTime: null,
  keys: {
    p256dh: createECDH('prime256v1').generateKeys().toString('base64url'),
    auth: randomBytes(16).toString('base64url'),
  },
});
const post = (userId: string, payload: unknown, token = h.token(userId)) =>
  h.svc.app.inject({
    method: 'POST',
    url: `/v1/users/${userId}/push-subscriptions`,
    headers: bearer(token),
    payload: payload as object,
  });
const del = (userId: string, endpoint: string, how: 'body' | 'query' = 'body', token = h.token(userId)) =>
  h.svc.app.inject({
    method: 'DELETE',
    url: `/v1/users/${userId}/push-subscriptions${how === 'query' ? `?endpoint=${encodeURIComponent(endpoint)}` : ''}`,
    headers: bearer(token),
    ...(how === 'body' ? { payload: { endpoint } } : {}),
  });
const endpointsOf = async (userId: string) =>
  (
    await h.svc.pool.query<{ endpoint: string }>(
      `SELECT endpoint FROM push_subscriptions WHERE user_id = $1 ORDER BY id`,
      [userId],
    )
  ).rows.map((r) => r.endpoint);

it('201 for a new browser, 200 for the same endpoint again (keys refreshed)', async () => {
  const sub = browser();
  const first = await post('ann', sub);
  expect(first.statusCode).toBe(201);
  expect(first.json()).toEqual({
    id: expect.any(String),
    userId: 'ann',
    endpoint: sub.endpoint,
    createdAt: expect.any(String),
  });
  const refreshed = { ...sub, keys: browser().keys };
  const again = await post('ann', refreshed);
  expect(again.statusCode).toBe(200);
  expect(again.json().id).toBe(first.json().id);
  const { rows } = await h.svc.pool.query(`SELECT p256dh, auth FROM push_subscriptions WHERE endpoint = $1`, [
    sub.endpoint,
  ]);
  expect(rows).toEqual([refreshed.keys]);
});

it('refuses a third browser at the limit with 409 and the reason, until one is removed', async () => {
  const [a, b, c] = [browser(), browser(), browser()];
  expect((await post('bo', a)).statusCode).toBe(201);
  expect((await post('bo', b)).statusCode).toBe(201);
  const refused = await post('bo', c);
  expect(refused.statusCode).toBe(409);
  expect(refused.json()).toMatchObject({
    code: 'PS_TOO_MANY_SUBSCRIPTIONS',
    message: expect.stringContaining('PUSH_MAX_SUBSCRIPTIONS_PER_USER = 2'),
  });
  // The same endpoint again is no new subscription: still 200 at the limit.
  expect((await post('bo', a)).statusCode).toBe(200);
  expect((await del('bo', a.endpoint)).statusCode).toBe(204);
  expect((await post('bo', c)).statusCode).toBe(201);
  expect(await endpointsOf('bo')).toEqual([b.endpoint, c.endpoint]);
});

it('DELETE removes by body or query, and answers 204 for an endpoint that is not there', async () => {
  const [a, b] = [browser(), browser()];
  await post('cat', a);
  await post('cat', b);
  expect((await del('cat', a.endpoint, 'query')).statusCode).toBe(204);
  expect((await del('cat', b.endpoint, 'body')).statusCode).toBe(204);
  expect((await del('cat', b.endpoint)).statusCode).toBe(204);
  expect(await endpointsOf('cat')).toEqual([]);
  const nothing = await h.svc.app.inject({
    method: 'DELETE',
    url: '/v1/users/cat/push-subscriptions',
    headers: bearer(h.token('cat')),
  });
  expect(nothing.statusCode).toBe(400);
  expect(nothing.json().message).toMatch(/name the endpoint to remove/);
});

it('a browser registered by another user moves to them', async () => {
  const sub = browser();
  await post('dan', sub);
  expect((await post('eli', sub)).statusCode).toBe(201);
  expect(await endpointsOf('dan')).toEqual([]);
  expect(await endpointsOf('eli')).toEqual([sub.endpoint]);
});

it.each([
  [
    'an http endpoint off localhost',
    { ...browser('http://push.example/x') },
    /'endpoint' must be an https URL \(http only on localhost/,
  ],
  [
    'a bad p256dh',
    { ...browser(), keys: { p256dh: 'abc', auth: randomBytes(16).toString('base64url') } },
    /'keys.p256dh' must be/,
  ],
  [
    'a bad auth',
    { ...browser(), keys: { ...browser().keys, auth: 'x' } },
    /'keys.auth' must be the browser's auth secret: 16 bytes/,
  ],
  ['not an object', [1, 2], /body must be a JSON object/],
])('refuses %s with 400 PS_INVALID_SUBSCRIPTION and the reason', async (_what, body, reason) => {
  const res = await post('fin', body);
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({
    statusCode: 400,
    code: 'PS_INVALID_SUBSCRIPTION',
    message: expect.stringMatching(reason),
  });
  expect(await endpointsOf('fin')).toEqual([]);
});

it("a user reaches only their own subscriptions; an operator reaches anyone's; nobody without a token", async () => {
  const sub = browser();
  const other = await post('gil', sub, h.token('hana'));
  expect(other.statusCode).toBe(403);
  expect(other.json().code).toBe('PS_FORBIDDEN_USER');
  expect((await del('gil', sub.endpoint, 'body', h.token('hana'))).statusCode).toBe(403);
  const anonymous = await h.svc.app.inject({ method: 'POST', url: '/v1/users/gil/push-subscriptions', payload: sub });
  expect(anonymous.statusCode).toBe(401);
  expect((await post('gil', sub, h.adminToken())).statusCode).toBe(201);
  expect((await del('gil', sub.endpoint, 'body', h.adminToken())).statusCode).toBe(204);
  expect(await endpointsOf('gil')).toEqual([]);
});

it('serves the VAPID public key to anyone, and the page and its service worker', async () => {
  const key = await h.svc.app.inject({ url: '/v1/push/vapid-public-key' });
  expect(key.statusCode).toBe(200);
  expect(key.json()).toEqual({ publicKey: h.config.VAPID_PUBLIC_KEY });
  const page = await h.svc.app.inject({ url: '/push/' });
  expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(page.headers['content-security-policy']).toContain("script-src 'self'");
  expect(page.body).toContain('<script src="/push/page.js" defer></script>');
  const sw = await h.svc.app.inject({ url: '/push/sw.js' });
  expect(sw.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(sw.body).toContain("addEventListener('push'");
  const doc = (await h.svc.app.inject({ url: '/openapi.json' })).json();
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining(['/v1/users/{userId}/push-subscriptions', '/v1/push/vapid-public-key', '/push/']),
  );
});
