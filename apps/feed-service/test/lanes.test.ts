import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import pg from 'pg';
import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { FANOUT_QUEUE } from '../src/handlers/internal-messages';
import { createFeedService, type FeedService } from '../src/service';
import {
  DAY_MS,
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
 * Lanes (docs/FEED.md "Lanes"). Isolation: with the large fan-out lane of a replica that runs every
 * lane blocked in the middle of a fan-out (its chunk writer waiting on a row lock this test holds,
 * the rest of the fan-out's chunks queued behind it), a small author's post still reaches its
 * followers and a follow is applied and backfilled; the fan-out is provably still stuck when they
 * are done, and finishes once released. Routing (FEED_LANES): an activity replica writes one-chunk
 * fan-outs itself and never takes a large fan-out's chunks; a fan-out replica on the same broker,
 * database and Redis takes them.
 */
async function chunksDone(h: Harness, postId: string): Promise<{ total: number; done: number }> {
  const { rows } = await h.pool.query<{ total: number; done: number }>(
    `SELECT count(*)::int AS total, (count(*) FILTER (WHERE done_at IS NOT NULL))::int AS done FROM feed_fanout_chunks WHERE post_id = $1`,
    [postId],
  );
  return rows[0];
}

/** Ready messages and consumers of a queue, straight from the broker (checkQueue: exact, no stats delay). */
async function queueState(url: string, queue: string): Promise<{ messageCount: number; consumerCount: number }> {
  const conn = await amqplib.connect(url);
  try {
    const { messageCount, consumerCount } = await (await conn.createChannel()).checkQueue(queue);
    return { messageCount, consumerCount };
  } finally {
    await conn.close().catch(() => undefined);
  }
}

describe('one replica running every lane (FEED_LANES=all)', () => {
  let h: Harness;
  let locker: pg.Client | undefined;

  beforeAll(async () => {
    h = await startHarness('lanes-all', { env: { FEED_FANOUT_CHUNK_SIZE: '10' } });
  }, 60_000);
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await h?.close();
  });

  it('does the small lane’s work (a small post, a follow and its backfill) while the fan-out lane is blocked with work undone', async () => {
    const big = `big-${randomUUID().slice(0, 8)}`;
    const small = `small-${randomUUID().slice(0, 8)}`;
    const bigFollowers = await seedFollowers(h, big, 400); // 40 chunks
    const smallFollowers = await seedFollowers(h, small, 10);
    const bigPost = `bp-${randomUUID()}`;
    const smallPost = `sp-${randomUUID()}`;

    await h.publish(event('post.published', { postId: bigPost, authorId: big, title: 'big', excerpt: 'forty chunks' }));
    await eventually('the large fan-out planned', async () => (await chunksDone(h, bigPost)).total === 40, 30_000, 10);
    // Block the fan-out lane: the second half of the chunks is locked, so the one chunk writer
    // (FEED_FANOUT_CONCURRENCY=1) stops at the first of them and everything queued behind it waits.
    locker = new pg.Client({ connectionString: h.db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM feed_fanout_chunks WHERE post_id = $1 AND chunk_no >= 20 FOR UPDATE', [bigPost]);
    const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const writerBlocked = async () => {
      const { rows } = await h.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
        [lockerPid],
      );
      return rows[0].n === 1;
    };
    await eventually('the chunk writer blocked on the lock', writerBlocked, 30_000, 20);

    // The small lane: a small author's post, and a follow of that author by a reader whose feed is live.
    await h.publish(
      event('post.published', { postId: smallPost, authorId: small, title: 'small', excerpt: 'one chunk' }),
    );
    await eventually(
      'the small post in its followers’ feeds',
      async () => (await feedsHolding(h.redis, smallFollowers, smallPost)) === 10,
      30_000,
    );
    const reader = `reader-${randomUUID().slice(0, 8)}`;
    await h.redis.set(`live:${reader}`, '1', 'PX', DAY_MS);
    await h.publish(event('user.followed', { followerId: reader, followeeId: small }));
    await eventually(
      'the follow applied and backfilled',
      async () => (await h.redis.zscore(`f:${reader}`, smallPost)) !== null,
      30_000,
    );

    // All of that happened while the fan-out lane still held undone work: its writer is still
    // blocked, the chunks behind the lock are not done, and the fan-out has not finished.
    expect(await writerBlocked()).toBe(true);
    const during = await chunksDone(h, bigPost);
    expect(during.done).toBeLessThanOrEqual(20);
    expect(
      (await h.pool.query('SELECT done_at FROM feed_fanout_jobs WHERE post_id = $1', [bigPost])).rows[0].done_at,
    ).toBeNull();
    expect(await feedsHolding(h.redis, bigFollowers.slice(200), bigPost)).toBe(0);

    await locker.query('ROLLBACK');
    await eventually(
      'the large fan-out finished once released',
      async () => (await chunksDone(h, bigPost)).done === 40,
      60_000,
    );
    expect(await feedsHolding(h.redis, bigFollowers, bigPost)).toBe(400);
  }, 120_000);
});

describe('FEED_LANES=activity and FEED_LANES=fanout replicas', () => {
  let h: Harness;
  let fanoutReplica: FeedService | undefined;

  beforeAll(async () => {
    h = await startHarness('lanes', { env: { FEED_LANES: 'activity', FEED_FANOUT_CHUNK_SIZE: '10' } });
  }, 60_000);
  afterAll(async () => {
    await fanoutReplica?.stop();
    await fanoutReplica?.app.close();
    await h?.close();
  });

  it('an activity replica writes small posts and leaves the chunks of a large fan-out to a fan-out replica', async () => {
    const big = `big-${randomUUID().slice(0, 8)}`;
    const small = `small-${randomUUID().slice(0, 8)}`;
    const bigFollowers = await seedFollowers(h, big, 35);
    const smallFollowers = await seedFollowers(h, small, 10);
    const bigPost = `bp-${randomUUID()}`;
    const smallPost = `sp-${randomUUID()}`;

    await h.publish(event('post.published', { postId: bigPost, authorId: big, title: 'big', excerpt: 'four chunks' }));
    await eventually('the large fan-out planned', async () => (await chunksDone(h, bigPost)).total === 4);
    await h.publish(
      event('post.published', { postId: smallPost, authorId: small, title: 'small', excerpt: 'one chunk' }),
    );
    await eventually(
      'the small post written by the activity replica',
      async () => (await feedsHolding(h.redis, smallFollowers, smallPost)) === 10,
    );

    // The four chunks sit on feed-service.fanout, which nothing consumes here.
    const amqpUrl = h.config.AMQP_URL;
    await eventually('the chunks queued', async () => (await queueState(amqpUrl, FANOUT_QUEUE)).messageCount === 4);
    expect(await queueState(amqpUrl, FANOUT_QUEUE)).toEqual({ messageCount: 4, consumerCount: 0 });
    expect(await chunksDone(h, bigPost)).toEqual({ total: 4, done: 0 });
    expect(await feedsHolding(h.redis, bigFollowers, bigPost)).toBe(0);

    const config = testConfig(h.db, h.vhost, h.prefix, { env: { FEED_LANES: 'fanout', FEED_FANOUT_CHUNK_SIZE: '10' } });
    fanoutReplica = createFeedService(config, {
      logger: testLogger('lanes-fanout'),
      registry: new Registry(),
      topology: FAST_RETRY_TOPOLOGY,
    });
    await fanoutReplica.start();
    await eventually(
      'the fan-out replica wrote every chunk',
      async () => (await chunksDone(h, bigPost)).done === 4,
      30_000,
    );
    expect(await feedsHolding(h.redis, bigFollowers, bigPost)).toBe(35);
    expect((await fanoutReplica.metrics.chunks.get()).values.find((v) => v.labels.outcome === 'done')?.value).toBe(4);
  }, 90_000);

  it('refuses an unknown FEED_LANES, naming the variable', () => {
    expect(() => testConfig(h.db, h.vhost, h.prefix, { env: { FEED_LANES: 'chunks' } })).toThrow(/FEED_LANES/);
  });
});
