import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import type { DemoService } from '../src/service';
import { count, createUsers, testService } from './helpers';

/**
 * The write rate limit (@fastify/rate-limit): one budget per acting user across every write route,
 * per client address when anonymous. A small limit and an hour-long window, so the test counts
 * requests and never depends on the clock.
 */
const LIMIT = 4;
let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createTestDatabase('demo_rate_limit');
  service = testService(db, { env: { DEMO_WRITE_RATE_LIMIT: String(LIMIT), DEMO_WRITE_RATE_WINDOW_MS: '1h' } });
  ({ pool, app } = service);
  await app.ready();
  // Anonymous upserts from one address: they spend that address's budget (2 of 4).
  await createUsers(app, ['ada', 'bob']);
});

afterAll(async () => {
  await service.stop();
  await app.close();
  await db.drop();
});

const post = (headers: Record<string, string>, title = 'Backpressure') =>
  app.inject({ method: 'POST', url: '/v1/posts', headers, payload: { title, body: 'on purpose' } });

it('answers the write past the limit 429 with a coded body and Retry-After, counted per acting user across routes', async () => {
  const ada = { 'x-user-id': 'ada' };
  const statuses = [
    (await post(ada)).statusCode,
    (await app.inject({ method: 'POST', url: '/v1/users/bob/follow', headers: ada })).statusCode,
    (await post(ada)).statusCode,
    (await app.inject({ method: 'DELETE', url: '/v1/users/bob/follow', headers: ada })).statusCode,
  ];
  expect(statuses).toEqual([201, 201, 201, 200]);
  const posts = await count(pool, 'community_posts');

  const refused = await post(ada);
  expect(refused.statusCode).toBe(429);
  expect(refused.json()).toEqual({
    statusCode: 429,
    code: 'RATE_LIMITED',
    error: 'Too Many Requests',
    message: expect.stringMatching(
      /^Too many writes: at most 4 per 3600 s for one user \(or one address when anonymous\); retry after \d+ s$/,
    ),
  });
  const retryAfter = Number(refused.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(3600);
  expect(refused.json().message).toContain(`retry after ${retryAfter} s`);
  expect(refused.headers['x-ratelimit-limit']).toBe(String(LIMIT));
  // Another route spends the same budget; nothing was written past it.
  expect(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/reactions',
        headers: ada,
        payload: { targetType: 'post', targetId: 'x', emoji: '👍' },
      })
    ).statusCode,
  ).toBe(429);
  expect(await count(pool, 'community_posts')).toBe(posts);

  // Bob's budget is his own, on the same address.
  expect((await post({ 'x-user-id': 'bob' })).statusCode).toBe(201);
});

it('counts anonymous writes per client address, apart from the users acting from it', async () => {
  // 2 of the address's 4 went on creating ada and bob.
  const upsert = (id: string) =>
    app.inject({ method: 'POST', url: '/v1/users', payload: { id, email: `${id}@example.test`, displayName: id } });
  expect([
    (await upsert('carol')).statusCode,
    (await upsert('dave')).statusCode,
    (await upsert('erin')).statusCode,
  ]).toEqual([201, 201, 429]);
  expect(await count(pool, 'community_users')).toBe(4);
  // Anonymous alerts (outside production) come out of the same address budget.
  expect(
    (
      await app.inject({
        method: 'POST',
        url: '/v1/security-alerts',
        payload: { userId: 'bob', kind: 'new-login', detail: 'x' },
      })
    ).json(),
  ).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED' });
});

it('does not limit reads and ops routes', async () => {
  for (let i = 0; i < LIMIT + 2; i++)
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
});
