import { randomUUID } from 'node:crypto';
import { event, eventually, feedsHolding, seedFollowers, startHarness, type Harness } from './harness';

/**
 * The small lane pre-empts large fan-outs (docs/FEED.md "Lanes"): while a small-lane holder's mark
 * is set, chunk writers of multi-chunk fan-outs write nothing; they resume when it is cleared, write
 * regardless once their per-chunk budget (FEED_FANOUT_YIELD_MAX_MS) is spent, and stop yielding to a
 * mark whose holder crashed once its lifetime ends. The one-chunk fan-out written inline (the small
 * lane itself) never yields.
 *
 * No test measures a duration. What ended a pause is read from the mechanism itself: the
 * `feed_fanout_yield_seconds_total{outcome}` series (resumed: the mark went; capped: the budget ran
 * out) and the mark's own state in Redis. The budget is the largest the config allows, so a pause
 * ended by the mark is never mistaken for one ended by the budget, however loaded the machine.
 */
const CAP_MS = 10_000;
let h: Harness;
/** Answers "busy" the chunk writers got from `smallLaneBusy` (the real Redis call, counted). */
let busyAnswers = 0;

beforeAll(async () => {
  h = await startHarness('preempt', {
    env: { FEED_FANOUT_CHUNK_SIZE: '10', FEED_FANOUT_YIELD_MAX_MS: String(CAP_MS), FEED_SMALL_LANE_MARK_MS: '60000' },
  });
  // Counts, does not replace: the writer still asks Redis. A writer told "busy" twice is inside its
  // yield loop, which is the state the tests below need before they change the mark.
  const cache = h.service.cache;
  const ask = cache.smallLaneBusy.bind(cache);
  cache.smallLaneBusy = async () => {
    const busy = await ask();
    if (busy) busyAnswers++;
    return busy;
  };
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

/** Messages of `type` the activity handler finished (its `finally`, which leaves the mark, included). */
async function handled(type: string): Promise<number> {
  const values = (await h.service.messaging!.metrics.succeeded.get()).values;
  return values
    .filter((v) => v.labels.queue === 'feed-service.activity' && v.labels.message_type === type)
    .reduce((n, v) => n + v.value, 0);
}

async function largeFanout(followers: number): Promise<{ postId: string; users: string[] }> {
  const author = `big-${randomUUID().slice(0, 8)}`;
  const users = await seedFollowers(h, author, followers);
  const postId = `bp-${randomUUID()}`;
  await h.publish(event('post.published', { postId, authorId: author, title: 'big', excerpt: 'many chunks' }));
  await eventually('the large fan-out planned', async () => (await chunks(postId)).total === followers / 10);
  return { postId, users };
}

/** Resolves once a chunk writer has been told "busy" twice more than now: it is yielding. */
async function writerYielding(): Promise<void> {
  const from = busyAnswers;
  await eventually('a chunk writer yielding to the mark', () => busyAnswers >= from + 2, 30_000, 10);
}

it('a large fan-out writes nothing while small-lane work is in flight, and resumes when it ends; the small post itself is written meanwhile', async () => {
  const holder = `test-${randomUUID()}`;
  await h.service.cache.enterSmallLane(holder, 60_000);
  const [resumedBefore, cappedBefore, postsBefore] = [
    await yielded('resumed'),
    await yielded('capped'),
    await handled('post.published'),
  ];
  const yielding = writerYielding();
  const { postId, users } = await largeFanout(40);
  await yielding;

  const small = `small-${randomUUID().slice(0, 8)}`;
  const smallFollowers = await seedFollowers(h, small, 5);
  const smallPost = `sp-${randomUUID()}`;
  await h.publish(
    event('post.published', { postId: smallPost, authorId: small, title: 'small', excerpt: 'one chunk' }),
  );
  await eventually(
    'the small post written although the mark is held',
    async () => (await feedsHolding(h.redis, smallFollowers, smallPost)) === 5,
    30_000,
  );
  // Both posts' handlers have returned: the small post's handler cleared its own mark, ours is left.
  await eventually('both post.published handled', async () => (await handled('post.published')) >= postsBefore + 2);
  expect(await h.redis.zrange('lane:small', 0, -1)).toEqual([holder]);

  // The large fan-out is still paused: nothing of it written, and its writer is still being told to wait.
  expect(await feedsHolding(h.redis, users, postId)).toBe(0);
  expect((await chunks(postId)).done).toBe(0);
  await writerYielding();

  await h.service.cache.leaveSmallLane(holder);
  await eventually('the large fan-out resumed and finished', async () => (await chunks(postId)).done === 4, 30_000, 20);
  expect(await feedsHolding(h.redis, users, postId)).toBe(40);
  expect(await chunks(postId)).toEqual({ total: 4, done: 4, attempts: 4, written: 40 });
  // The pause ended because the mark went (resumed), not because the budget ran out (capped).
  expect(await yielded('resumed')).toBeGreaterThan(resumedBefore);
  expect(await yielded('capped')).toBe(cappedBefore);
  expect(await h.redis.zcard('lane:small')).toBe(0);
}, 90_000);

it('a steady small lane cannot starve a large fan-out: each chunk yields at most FEED_FANOUT_YIELD_MAX_MS, then writes', async () => {
  const holder = `test-${randomUUID()}`;
  await h.service.cache.enterSmallLane(holder, 60_000); // never cleared during the fan-out
  try {
    const [cappedBefore, resumedBefore] = [await yielded('capped'), await yielded('resumed')];
    const { postId, users } = await largeFanout(20); // 2 chunks
    await eventually(
      'the large fan-out finished under a mark that never clears',
      async () => (await chunks(postId)).done === 2,
      60_000,
      20,
    );
    // The mark was in force the whole time, so only the budget can have ended each chunk's pause.
    expect(await h.service.cache.smallLaneBusy()).toBe(true);
    expect(await feedsHolding(h.redis, users, postId)).toBe(20);
    expect(await chunks(postId)).toEqual({ total: 2, done: 2, attempts: 2, written: 20 });
    // Each of the 2 chunks paused until its budget was spent (the counter holds the time paused,
    // which the budget arithmetic makes at least FEED_FANOUT_YIELD_MAX_MS per capped chunk), and no
    // pause ended because the lane cleared.
    expect((await yielded('capped')) - cappedBefore).toBeGreaterThanOrEqual((2 * CAP_MS) / 1000 - 0.001);
    expect(await yielded('resumed')).toBe(resumedBefore);
  } finally {
    await h.service.cache.leaveSmallLane(holder);
  }
}, 120_000);

it('a small-lane holder that crashed (its mark never cleared) holds fan-outs back only until the mark expires', async () => {
  // What a handler killed between enter and leave leaves behind: a mark with its lifetime.
  const crashed = `crashed-${randomUUID()}`;
  await h.service.cache.enterSmallLane(crashed, 60_000);
  try {
    const [cappedBefore, resumedBefore] = [await yielded('capped'), await yielded('resumed')];
    const yielding = writerYielding();
    const { postId, users } = await largeFanout(20);
    await yielding;
    // Its lifetime ends (the deadline, by Redis TIME, moved into the past instead of waiting for it);
    // nobody leaves the lane.
    const [sec, usec] = await h.redis.time();
    await h.redis.zadd('lane:small', 'XX', Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - 1, crashed);
    await eventually(
      'the large fan-out finished after the mark expired',
      async () => (await chunks(postId)).done === 2,
      30_000,
      20,
    );
    expect(await feedsHolding(h.redis, users, postId)).toBe(20);
    // The holder is still in the set: its expired deadline, not a leave and not the budget, ended the pause.
    expect(await h.redis.zscore('lane:small', crashed)).not.toBeNull();
    expect(await yielded('resumed')).toBeGreaterThan(resumedBefore);
    expect(await yielded('capped')).toBe(cappedBefore);
  } finally {
    await h.redis.zrem('lane:small', crashed);
  }
}, 90_000);

it('a follow leaves no small-lane mark behind', async () => {
  const before = await handled('user.followed');
  const followerId = `u-${randomUUID().slice(0, 8)}`;
  await h.publish(event('user.followed', { followerId, followeeId: `a-${randomUUID().slice(0, 8)}` }));
  await eventually('the follow handled', async () => (await handled('user.followed')) > before);
  expect((await h.pool.query('SELECT 1 FROM feed_follows WHERE follower_id = $1', [followerId])).rowCount).toBe(1);
  expect(await h.redis.zcard('lane:small')).toBe(0);
}, 30_000);
