import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { event, eventually, feedsHolding, seedFollowers, startHarness, type Harness } from './harness';

/**
 * The small lane pre-empts large fan-outs (docs/FEED.md "Lanes"): while a small-lane holder's mark
 * is set, chunk writers of multi-chunk fan-outs write nothing; they resume when it is cleared, write
 * regardless once their per-chunk budget (FEED_FANOUT_YIELD_MAX_MS) is spent, and stop yielding to a
 * mark whose holder crashed once its lifetime ends. The one-chunk fan-out written inline (the small
 * lane itself) never yields.
 */
const CAP_MS = 5_000;
let h: Harness;

beforeAll(async () => {
  h = await startHarness('preempt', { env: { FEED_FANOUT_CHUNK_SIZE: '10', FEED_FANOUT_YIELD_MAX_MS: String(CAP_MS), FEED_SMALL_LANE_MARK_MS: '60000' } });
}, 60_000);
afterAll(async () => h?.close());

async function chunks(postId: string): Promise<{ total: number; done: number; attempts: number; written: number }> {
  const { rows } = await h.pool.query<{ total: number; done: number; attempts: number; written: number }>(
    `SELECT count(*)::int AS total, (count(*) FILTER (WHERE done_at IS NOT NULL))::int AS done, coalesce(sum(attempts), 0)::int AS attempts, coalesce(sum(written), 0)::int AS written
     FROM feed_fanout_chunks WHERE post_id = $1`,
    [postId],
  );
  return rows[0];
}

async function yielded(outcome: 'resumed' | 'capped'): Promise<number> {
  return (await h.service.metrics.fanoutYield.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

async function largeFanout(followers: number): Promise<{ postId: string; users: string[] }> {
  const author = `big-${randomUUID().slice(0, 8)}`;
  const users = await seedFollowers(h, author, followers);
  const postId = `bp-${randomUUID()}`;
  await h.publish(event('post.published', { postId, authorId: author, title: 'big', excerpt: 'many chunks' }));
  await eventually('the large fan-out planned', async () => (await chunks(postId)).total === followers / 10);
  return { postId, users };
}

it('a large fan-out writes nothing while small-lane work is in flight, and resumes when it ends; the small post itself is written meanwhile', async () => {
  const holder = `test-${randomUUID()}`;
  await h.service.cache.enterSmallLane(holder, 60_000);
  const resumedBefore = await yielded('resumed');
  const { postId, users } = await largeFanout(40);

  const small = `small-${randomUUID().slice(0, 8)}`;
  const smallFollowers = await seedFollowers(h, small, 5);
  const smallPost = `sp-${randomUUID()}`;
  await h.publish(event('post.published', { postId: smallPost, authorId: small, title: 'small', excerpt: 'one chunk' }));
  await eventually('the small post written although the mark is held', async () => (await feedsHolding(h.redis, smallFollowers, smallPost)) === 5, 10_000);

  await sleep(1_000);
  expect(await feedsHolding(h.redis, users, postId)).toBe(0);
  expect((await chunks(postId)).done).toBe(0);

  await h.service.cache.leaveSmallLane(holder);
  const left = performance.now();
  await eventually('the large fan-out resumed and finished', async () => (await chunks(postId)).done === 4, 20_000, 20);
  // Resumed because the mark went, not because the budget ran out (3 s after the pause began).
  expect(performance.now() - left).toBeLessThan(CAP_MS - 1_000);
  expect(await feedsHolding(h.redis, users, postId)).toBe(40);
  expect(await chunks(postId)).toEqual({ total: 4, done: 4, attempts: 4, written: 40 });
  expect(await yielded('resumed')).toBeGreaterThan(resumedBefore);
  // The small post's handler cleared its own mark: nothing is left holding fan-outs back.
  expect(await h.redis.zcard('lane:small')).toBe(0);
}, 60_000);

it('a steady small lane cannot starve a large fan-out: each chunk yields at most FEED_FANOUT_YIELD_MAX_MS, then writes', async () => {
  const holder = `test-${randomUUID()}`;
  await h.service.cache.enterSmallLane(holder, 60_000); // never cleared during the fan-out
  try {
    const cappedBefore = await yielded('capped');
    const started = performance.now();
    const { postId, users } = await largeFanout(20); // 2 chunks
    await sleep(CAP_MS / 2);
    expect(await feedsHolding(h.redis, users, postId)).toBe(0);
    await eventually('the large fan-out finished under a mark that never clears', async () => (await chunks(postId)).done === 2, 20_000, 20);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(CAP_MS);
    expect(took).toBeLessThan(3 * CAP_MS);
    expect(await feedsHolding(h.redis, users, postId)).toBe(20);
    expect(await chunks(postId)).toEqual({ total: 2, done: 2, attempts: 2, written: 20 });
    expect(await yielded('capped')).toBeGreaterThan(cappedBefore);
  } finally {
    await h.service.cache.leaveSmallLane(holder);
  }
}, 60_000);

it('a small-lane holder that crashed (its mark never cleared) holds fan-outs back only until the mark expires', async () => {
  // What a handler killed between enter and leave leaves behind: a mark with its lifetime.
  await h.service.cache.enterSmallLane(`crashed-${randomUUID()}`, 800);
  const cappedBefore = await yielded('capped');
  const started = performance.now();
  const { postId, users } = await largeFanout(20);
  await eventually('the large fan-out finished after the mark expired', async () => (await chunks(postId)).done === 2, 20_000, 20);
  const took = performance.now() - started;
  expect(took).toBeLessThan(CAP_MS); // not the per-chunk budget: the mark's lifetime ended the pause
  expect(await feedsHolding(h.redis, users, postId)).toBe(20);
  expect(await yielded('capped')).toBe(cappedBefore);
}, 60_000);

it('a follow leaves no small-lane mark behind', async () => {
  const followerId = `u-${randomUUID().slice(0, 8)}`;
  await h.publish(event('user.followed', { followerId, followeeId: `a-${randomUUID().slice(0, 8)}` }));
  await eventually('the follow applied', async () => (await h.pool.query('SELECT 1 FROM feed_follows WHERE follower_id = $1', [followerId])).rowCount === 1);
  await sleep(100); // the handler clears its mark after its last step
  expect(await h.redis.zcard('lane:small')).toBe(0);
}, 30_000);
