import { randomUUID } from 'node:crypto';
import { event, eventually, seedFollowers, startHarness, startPrivateRedis, type Harness } from './harness';

/**
 * Postgres is the truth and Redis a cache: with Redis stopped in the middle of a run the feed API
 * answers the same pages from Postgres (and counts the fallbacks), the process keeps running,
 * posts published meanwhile are not lost, and after Redis returns empty (a restart without
 * persistence is a flush) feeds are rebuilt on their next read. A redis-server of this test's
 * own is stopped, never the shared one.
 */
let h: Harness;
let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
const base = Date.now() - 3_600_000;
const at = (s: number) => new Date(base + s * 1000);
const author = `ra-${randomUUID().slice(0, 8)}`;
let readers: string[];

beforeAll(async () => {
  redis = await startPrivateRedis();
  h = await startHarness('redis', { redisUrl: redis.url });
  readers = await seedFollowers(h, author, 3);
  for (let i = 1; i <= 6; i++)
    await h.publish(
      event('post.published', { postId: `r-${i}`, authorId: author, title: `t${i}`, excerpt: `e${i}` }, at(i)),
    );
  await eventually('fanned out', async () => (await h.redis.zcard(`f:${readers[0]}`)) === 6);
}, 60_000);
afterAll(async () => {
  await h?.close();
  await redis?.stop();
});

const reads = async () =>
  Object.fromEntries((await h.service.metrics.cacheReads.get()).values.map((v) => [v.labels.result, v.value]));
const ids = (body: { items: Array<{ postId: string }> }) => body.items.map((i) => i.postId);

it('answers from Postgres while Redis is down, loses no post published meanwhile, and rebuilds when it returns empty', async () => {
  const hit = await h.feed(readers[0], { limit: 4 });
  expect(hit.source).toBe('hit');
  const page2 = await h.feed(readers[0], { limit: 4, cursor: hit.body.nextCursor! });
  expect(ids(hit.body)).toEqual(['r-6', 'r-5', 'r-4', 'r-3']);

  await redis.stop();
  await eventually('client sees redis down', () => !h.service.cache.available());
  const down = await h.feed(readers[0], { limit: 4 });
  expect(down).toMatchObject({ status: 200, source: 'fallback' });
  expect(down.body).toEqual(hit.body);
  expect((await h.feed(readers[0], { limit: 4, cursor: hit.body.nextCursor! })).body).toEqual(page2.body);
  expect((await reads()).fallback).toBeGreaterThanOrEqual(2);

  // Published while Redis is down: recorded in Postgres at once (its fan-out waits in a retry tier).
  await h.publish(event('post.published', { postId: 'r-7', authorId: author, title: 't7', excerpt: 'e7' }, at(7)));
  await eventually(
    'r-7 served from Postgres',
    async () => ids((await h.feed(readers[1], { limit: 1 })).body)[0] === 'r-7',
  );
  const ready = await (await h.service.app.inject({ method: 'GET', url: '/readyz' })).json();
  expect(ready).toMatchObject({ status: 'ready', details: { redis: expect.stringMatching(/^down/) } });

  // Back, empty (no persistence): the first read rebuilds from the projections, correct at once.
  await redis.start();
  await eventually('client reconnected', () => h.service.cache.available(), 30_000);
  const rebuilt = await h.feed(readers[0], { limit: 4 });
  expect(rebuilt.source).toBe('miss');
  expect(ids(rebuilt.body)).toEqual(['r-7', 'r-6', 'r-5', 'r-4']);
  expect((await h.feed(readers[0], { limit: 4 })).source).toBe('hit');
  // The retried fan-out of r-7 completes once Redis is back.
  await eventually(
    'r-7 fan-out done',
    async () => (await h.pool.query(`SELECT done_at FROM feed_fanout_jobs WHERE post_id = 'r-7'`)).rows[0]?.done_at,
    20_000,
    100,
  );
}, 60_000);

it('rebuilds flushed feeds on their next read with the same pages', async () => {
  const before = await h.feed(readers[2], { limit: 5 });
  await h.clearRedis();
  const after = await h.feed(readers[2], { limit: 5 });
  expect(after.source).toBe('miss');
  expect(after.body).toEqual(before.body);
  expect(ids(after.body)).toEqual(['r-7', 'r-6', 'r-5', 'r-4', 'r-3']);
  // Item bodies flushed while the feed survives are reloaded from Postgres.
  await h.redis.del('p:r-6');
  expect((await h.feed(readers[2], { limit: 5 })).body).toEqual(before.body);
});
