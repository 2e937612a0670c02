import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { createFeedService, type FeedService } from '../src/service';
import {
  event,
  eventually,
  FAST_RETRY_TOPOLOGY,
  feedsHolding,
  seedFollowers,
  startHarness,
  testConfig,
  type Harness,
} from './harness';

/**
 * The handlers honour their deadline (FEED_HANDLER_TIMEOUT_MS → the runtime's ctx.signal): a handler
 * whose deadline passes while it waits inside its transaction (on a row lock this test holds) stops
 * there: the statement is cancelled and rolled back while the lock is still held, so nothing of it
 * commits after the deadline; the message goes to a retry tier, and a later attempt completes it.
 * The deadline is short by configuration; nothing here waits for time, only for the states.
 */
const TIMEOUT_MS = '1500';
let h: Harness;
let replica: FeedService | undefined;
const lockers: pg.Client[] = [];

beforeAll(async () => {
  // The harness replica runs the activity lane; a chunk test starts a fan-out replica once its lock is held.
  h = await startHarness('deadline', {
    env: { FEED_LANES: 'activity', FEED_FANOUT_CHUNK_SIZE: '10', FEED_HANDLER_TIMEOUT_MS: TIMEOUT_MS },
  });
}, 60_000);
afterAll(async () => {
  for (const l of lockers) await l.end().catch(() => undefined);
  await replica?.stop();
  await replica?.app.close();
  await h?.close();
});

/** Runs `sql` in a transaction of its own that keeps its row locks until `release()`. */
async function holdLock(sql: string, params: unknown[]): Promise<{ pid: number; release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: h.db.url });
  lockers.push(c);
  await c.connect();
  await c.query('BEGIN');
  expect((await c.query(sql, params)).rowCount).toBe(1);
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  return { pid, release: async () => void (await c.query('ROLLBACK')) };
}

/** Backends of the service waiting on `lockPid`'s locks. */
async function waitingOn(lockPid: number): Promise<number[]> {
  const { rows } = await h.pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
    [lockPid],
  );
  return rows.map((r) => r.pid);
}

async function timeouts(service: FeedService, queue: string): Promise<number> {
  const failed = (await service.messaging?.metrics.failed.get())?.values ?? [];
  return failed
    .filter((v) => v.labels.queue === queue && v.labels.error_class === 'HandlerTimeoutError')
    .reduce((n, v) => n + v.value, 0);
}

it('a chunk whose deadline passes in its checkpoint transaction is cancelled, commits nothing, and is completed by its retry', async () => {
  const author = `dl-${randomUUID().slice(0, 8)}`;
  const followers = await seedFollowers(h, author, 20); // 2 chunks: the fan-out lane
  const postId = `p-${randomUUID()}`;
  await h.publish(event('post.published', { postId, authorId: author, title: 'deadline', excerpt: '' }));
  await eventually(
    'planned',
    async () => (await h.pool.query('SELECT 1 FROM feed_fanout_jobs WHERE post_id = $1', [postId])).rowCount === 1,
    30_000,
    20,
  );
  // The checkpoint's second statement (the job's counter) waits on this lock: the chunk is mid-work,
  // its Redis writes done, its checkpoint not committed.
  const lock = await holdLock('SELECT 1 FROM feed_fanout_jobs WHERE post_id = $1 FOR UPDATE', [postId]);

  const config = testConfig(h.db, h.vhost, h.prefix, {
    env: { FEED_LANES: 'fanout', FEED_FANOUT_CHUNK_SIZE: '10', FEED_HANDLER_TIMEOUT_MS: TIMEOUT_MS },
  });
  const fanoutReplica = createFeedService(config, {
    logger: testLogger('deadline-fanout'),
    registry: new Registry(),
    topology: FAST_RETRY_TOPOLOGY,
  });
  replica = fanoutReplica;
  await fanoutReplica.start();
  const [first] = await eventually(
    'the chunk waiting on the lock',
    async () => ((await waitingOn(lock.pid)).length ? waitingOn(lock.pid) : undefined),
    30_000,
    20,
  );

  // The deadline passes: the runtime sends the message to a retry tier, and the handler's own
  // transaction ends (cancelled, rolled back) although the lock it waited for is still held.
  await eventually(
    'the chunk timed out',
    async () => (await timeouts(fanoutReplica, 'feed-service.fanout')) >= 1,
    30_000,
    20,
  );
  await eventually(
    'the timed-out transaction stopped waiting',
    async () => !(await waitingOn(lock.pid)).includes(first),
    30_000,
    20,
  );
  const { rows } = await h.pool.query(
    'SELECT count(*) FILTER (WHERE done_at IS NOT NULL)::int AS done FROM feed_fanout_chunks WHERE post_id = $1',
    [postId],
  );
  expect(rows[0].done).toBe(0); // nothing of it committed
  expect(
    (await h.pool.query('SELECT chunks_done FROM feed_fanout_jobs WHERE post_id = $1', [postId])).rows[0].chunks_done,
  ).toBe(0);

  await lock.release();
  await eventually(
    'the fan-out completed by a later attempt',
    async () =>
      (await h.pool.query('SELECT done_at FROM feed_fanout_jobs WHERE post_id = $1', [postId])).rows[0].done_at,
    60_000,
  );
  const attempts = await h.pool.query<{ attempts: number }>(
    'SELECT attempts FROM feed_fanout_chunks WHERE post_id = $1 ORDER BY attempts DESC LIMIT 1',
    [postId],
  );
  expect(attempts.rows[0].attempts).toBeGreaterThanOrEqual(2);
  expect(
    (await h.pool.query('SELECT chunks_done FROM feed_fanout_jobs WHERE post_id = $1', [postId])).rows[0].chunks_done,
  ).toBe(2);
  expect(await feedsHolding(h.redis, followers, postId)).toBe(20);
  const pipe = h.redis.pipeline();
  for (const u of followers) pipe.zcard(`f:${u}`);
  expect(((await pipe.exec()) ?? []).map(([, n]) => n)).toEqual(followers.map(() => 1));
}, 120_000);

it('a follow whose deadline passes while it waits for the edge is cancelled, changes nothing, and is applied by its retry', async () => {
  const [followerId, followeeId] = [`u-${randomUUID().slice(0, 8)}`, `a-${randomUUID().slice(0, 8)}`];
  await h.pool.query(
    `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at) VALUES ($1, $2, false, now() - interval '1 day')`,
    [followerId, followeeId],
  );
  const lock = await holdLock('SELECT 1 FROM feed_follows WHERE follower_id = $1 AND followee_id = $2 FOR UPDATE', [
    followerId,
    followeeId,
  ]);
  const before = await timeouts(h.service, 'feed-service.activity');

  await h.publish(event('user.followed', { followerId, followeeId }));
  const [first] = await eventually(
    'the follow waiting on the edge',
    async () => ((await waitingOn(lock.pid)).length ? waitingOn(lock.pid) : undefined),
    30_000,
    20,
  );
  await eventually(
    'the follow timed out',
    async () => (await timeouts(h.service, 'feed-service.activity')) > before,
    30_000,
    20,
  );
  await eventually(
    'the timed-out transaction stopped waiting',
    async () => !(await waitingOn(lock.pid)).includes(first),
    30_000,
    20,
  );
  const edge = async () =>
    (
      await h.pool.query('SELECT active FROM feed_follows WHERE follower_id = $1 AND followee_id = $2', [
        followerId,
        followeeId,
      ])
    ).rows[0].active as boolean;
  const count = async () =>
    (await h.pool.query('SELECT follower_count FROM feed_authors WHERE author_id = $1', [followeeId])).rows[0]
      ?.follower_count ?? 0;
  expect(await edge()).toBe(false);
  expect(await count()).toBe(0);

  await lock.release();
  await eventually('the follow applied by a later attempt', edge, 30_000);
  expect(await count()).toBe(1);
}, 60_000);
