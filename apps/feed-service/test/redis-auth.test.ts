import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import {
  captureLogger,
  event,
  eventually,
  seedFollowers,
  startHarness,
  startPrivateRedis,
  type Harness,
} from './harness';

/**
 * Redis with credentials, as production runs it (docs/DEPLOY.md "Redis"): feed-service logs in with
 * the user and password of REDIS_URL as an ACL user that may touch only its own key prefix, and the
 * password-less default user is off. A fan-out (its Lua scripts included) and a feed read work
 * within those keys; a wrong password leaves feeds answered from Postgres, with the refusal in the
 * log and the password nowhere in it. A redis-server of this test's own.
 */
const PASSWORD = `pw-${randomUUID()}`;
// The harness's key prefix is testRedisPrefix('feed:redis-auth…') = `test:feed:redis-auth…:<pid>:<hex>:`.
const KEYS = '~test:feed:redis-auth*';
let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
let h: Harness;
let refused: Harness | undefined;

beforeAll(async () => {
  // The rules of docs/DEPLOY.md "Secrets" (users.acl), with this test's prefix for `feed:`.
  redis = await startPrivateRedis(undefined, {
    users: [['feed', 'on', `>${PASSWORD}`, KEYS, '&*', '+@all', '-@admin', '-@dangerous']],
    login: { user: 'feed', password: PASSWORD },
  });
  h = await startHarness('redis-auth', { redisUrl: redis.url });
}, 60_000);

afterAll(async () => {
  await refused?.close();
  await h?.close();
  await redis?.stop();
});

it('fans out and reads feeds as an ACL user limited to its prefix, which may touch no other key', async () => {
  const author = `au-${randomUUID().slice(0, 8)}`;
  const readers = await seedFollowers(h, author, 3);
  for (let i = 1; i <= 3; i++)
    await h.publish(
      event(
        'post.published',
        { postId: `p-${i}`, authorId: author, title: `t${i}`, excerpt: `e${i}` },
        new Date(Date.now() - 60_000 + i * 1000),
      ),
    );
  await eventually(
    "fanned out into the readers' feeds",
    async () => (await h.redis.zcard(`f:${readers[0]}`)) === 3,
    60_000,
  );
  const page = await h.feed(readers[0], { limit: 10 });
  expect(page.status).toBe(200);
  expect(page.source).toBe('hit');
  expect(page.body.items.map((i) => i.postId)).toEqual(['p-3', 'p-2', 'p-1']);

  // The limit is real: the same login may not write a key outside the prefix, and no login is no access.
  const same = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  const anonymous = new Redis(`redis://127.0.0.1:${redis.port}`, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
  }); // the ready check's INFO is refused too
  for (const c of [same, anonymous]) c.on('error', () => undefined);
  try {
    await same.connect();
    await expect(same.set('elsewhere', '1')).rejects.toThrow(/NOPERM/);
    await anonymous.connect();
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
  } finally {
    same.disconnect();
    anonymous.disconnect();
  }
}, 90_000);

it('with a wrong password answers feeds from Postgres and says why in the log, without the password', async () => {
  const wrong = `wrong-${randomUUID()}`;
  const { logger, lines } = captureLogger('redis-auth-refused', 'warn');
  refused = await startHarness('redis-auth-refused', {
    redisUrl: `redis://feed:${wrong}@127.0.0.1:${redis.port}`,
    logger,
    amqp: false,
  });
  await eventually('the refusal logged', () => lines.some((l) => /WRONGPASS/.test(JSON.stringify(l))), 30_000);
  expect(refused.service.cache.available()).toBe(false);
  const page = await refused.feed('nobody', { limit: 5 });
  expect(page.status).toBe(200);
  expect(page.source).toBe('fallback');
  expect(JSON.stringify(lines)).not.toContain(wrong);
}, 60_000);
