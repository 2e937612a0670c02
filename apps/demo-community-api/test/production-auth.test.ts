import { generateKeyPairSync } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { adminTokenSigner, generateOperatorKey, serviceTokenSigner, userTokenSigner } from '@community/service';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { SECURITY_ALERT_SCOPE } from '../src/config';
import type { DemoService } from '../src/service';
import { count, eventsOf, testService } from './helpers';

/**
 * NODE_ENV=production: nobody acts by naming themselves. Writes need a verified user token, a user
 * writes only their own profile (an operator's admin token: anyone's), and security alerts need a
 * service token of SECURITY_ALERTS_ISSUER with the scope. Every refusal writes nothing.
 */
const ISSUER = 'identity-platform';
const alertKeys = generateKeyPairSync('ed25519');
const otherKeys = generateKeyPairSync('ed25519');
const operator = generateOperatorKey('ops-alice', 'ops-alice-1');
const pem = (key: typeof alertKeys.publicKey) => key.export({ type: 'spki', format: 'pem' }).toString();

let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createTestDatabase('demo_prod_auth');
  service = testService(db, {
    env: {
      NODE_ENV: 'production',
      ADMIN_KEYS: JSON.stringify([operator.entry]),
      SECURITY_ALERTS_ISSUER: ISSUER,
      SECURITY_ALERTS_VERIFY_KEY: pem(alertKeys.publicKey),
    },
  });
  ({ pool, app } = service);
  await app.ready();
});

afterAll(async () => {
  await service.stop();
  await app.close();
  await db.drop();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const userToken = (sub: string) => bearer(app.jwt.sign({ sub }));
const profile = (id: string) => ({ id, email: `${id}@example.test`, displayName: `${id} Tester` });
const alertToken = (options: { key?: typeof alertKeys.privateKey; issuer?: string; scope?: string } = {}) =>
  bearer(
    serviceTokenSigner({
      signingKey: options.key ?? alertKeys.privateKey,
      issuer: options.issuer ?? ISSUER,
      audience: 'demo-community-api',
      scope: options.scope ?? SECURITY_ALERT_SCOPE,
    })(),
  );

async function written(): Promise<number[]> {
  return [
    await count(pool, 'community_users'),
    await count(pool, 'community_posts'),
    await count(pool, 'community_security_alerts'),
    await count(pool, 'outbox_messages'),
  ];
}

it('refuses x-user-id with a 401 that says to send a user token, and a write with no identity at all', async () => {
  const before = await written();
  const asHeader = await app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: { 'x-user-id': 'mallory' },
    payload: profile('mallory'),
  });
  expect(asHeader.statusCode).toBe(401);
  expect(asHeader.json()).toEqual({
    statusCode: 401,
    code: 'USER_ID_HEADER_REFUSED',
    error: 'Unauthorized',
    message: 'x-user-id is not accepted in production: send Authorization: Bearer <user token> (sub = your user id)',
  });
  const anonymousUpsert = await app.inject({ method: 'POST', url: '/v1/users', payload: profile('mallory') });
  expect(anonymousUpsert.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_REQUIRED' });
  for (const [method, url, payload] of [
    ['POST', '/v1/posts', { title: 't', body: 'b' }],
    ['POST', '/v1/posts/p-1/comments', { body: 'hi' }],
    ['POST', '/v1/reactions', { targetType: 'post', targetId: 'p-1', emoji: '👍' }],
    ['POST', '/v1/users/ada/follow', undefined],
    ['DELETE', '/v1/users/ada/follow', undefined],
  ] as const) {
    const res = await app.inject({ method, url, headers: { 'x-user-id': 'ada' }, ...(payload ? { payload } : {}) });
    expect([url, res.statusCode, res.json().code]).toEqual([url, 401, 'USER_ID_HEADER_REFUSED']);
  }
  expect(await written()).toEqual(before);
});

it('writes with a verified user token: your own profile (201), not someone else’s (403), and your own posts', async () => {
  const created = await app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: userToken('ada'),
    payload: profile('ada'),
  });
  expect(created.statusCode).toBe(201);
  const before = await written();
  const takeover = await app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: userToken('mallory'),
    payload: { ...profile('ada'), email: 'mallory@example.test' },
  });
  expect(takeover.statusCode).toBe(403);
  expect(takeover.json()).toEqual({
    statusCode: 403,
    code: 'PROFILE_FORBIDDEN',
    error: 'Forbidden',
    message: 'User "mallory" may create or update only their own profile, not "ada" (an operator’s admin token may)',
  });
  // A token signed with another secret, or none at all, names nobody.
  const forged = await app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: { authorization: 'Bearer not.a.jwt' },
    payload: profile('ada'),
  });
  expect(forged.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });
  const otherSecret = userTokenSigner({
    secret: 'another-secret-of-at-least-32-characters',
    issuer: 'community-site',
    audience: 'community-notifications',
  })('ada');
  const signedElsewhere = await app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: bearer(otherSecret),
    payload: profile('ada'),
  });
  expect(signedElsewhere.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });
  expect(await written()).toEqual(before);
  expect((await pool.query('SELECT email FROM community_users WHERE id = $1', ['ada'])).rows).toEqual([
    { email: 'ada@example.test' },
  ]);

  const post = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: userToken('ada'),
    payload: { title: 'Signed', body: 'and sealed' },
  });
  expect(post.statusCode).toBe(201);
  expect(await eventsOf(pool, post.headers['x-correlation-id'])).toMatchObject([
    { event_type: 'post.published', aggregate_id: 'ada' },
  ]);
});

it('lets an operator’s admin token write any profile', async () => {
  const admin = bearer(
    adminTokenSigner({ signingKey: operator.privateKeyPem, kid: operator.entry.kid, audience: 'demo-community-api' })(),
  );
  const res = await app.inject({ method: 'POST', url: '/v1/users', headers: admin, payload: profile('bob') });
  expect(res.statusCode).toBe(201);
  expect(await eventsOf(pool, res.headers['x-correlation-id'])).toMatchObject([
    { event_type: 'user.upserted', aggregate_id: 'bob' },
  ]);
});

it('raises a security alert only with a service token of SECURITY_ALERTS_ISSUER holding the scope', async () => {
  await app.inject({ method: 'POST', url: '/v1/users', headers: userToken('carol'), payload: profile('carol') });
  const payload = { userId: 'carol', kind: 'new-login', detail: 'Click here to reset your password' };
  const before = await written();
  const anonymous = await app.inject({ method: 'POST', url: '/v1/security-alerts', payload });
  expect(anonymous.json()).toEqual({
    statusCode: 401,
    code: 'SERVICE_TOKEN_REQUIRED',
    error: 'Unauthorized',
    message: `Security alerts are raised by ${ISSUER}: send Authorization: Bearer <its service token> (scope security-alerts:raise)`,
  });
  const byHeader = await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    headers: { 'x-user-id': 'carol' },
    payload,
  });
  expect(byHeader.json()).toMatchObject({ statusCode: 401, code: 'SERVICE_TOKEN_REQUIRED' });
  const byUser = await app.inject({ method: 'POST', url: '/v1/security-alerts', headers: userToken('carol'), payload });
  expect(byUser.json()).toMatchObject({ statusCode: 403, code: 'SECURITY_ALERT_FORBIDDEN' });
  const otherKey = await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    headers: alertToken({ key: otherKeys.privateKey }),
    payload,
  });
  expect(otherKey.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });
  const otherIssuer = await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    headers: alertToken({ issuer: 'email-service' }),
    payload,
  });
  expect(otherIssuer.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });
  const noScope = await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    headers: alertToken({ scope: 'preferences:opt-out' }),
    payload,
  });
  expect(noScope.json()).toMatchObject({ statusCode: 403, code: 'SERVICE_FORBIDDEN' });
  // The service token raises alerts, and nothing else: it is no user token.
  const asUser = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: alertToken(),
    payload: { title: 't', body: 'b' },
  });
  expect(asUser.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });
  expect(await written()).toEqual(before);

  const raised = await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    headers: alertToken(),
    payload: { ...payload, detail: 'Firefox on Linux' },
  });
  expect(raised.statusCode).toBe(201);
  expect(await eventsOf(pool, raised.headers['x-correlation-id'])).toMatchObject([
    {
      event_type: 'security.alert',
      aggregate_id: 'carol',
      payload: { data: { userId: 'carol', kind: 'new-login', detail: 'Firefox on Linux' } },
    },
  ]);
});
