import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { createFeedService, type FeedService } from '../src/service';
import {
  captureLogger,
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
 * The per-author fan-out lease (docs/FEED.md "Fan-out" step 3; `author:<id>` in Redis, SET NX PX):
 * one owner; a second fan-out of the author gets AUTHOR_BUSY and a delayed retry, and runs once the
 * first has finished; every chunk extends it; a holder that crashed stops holding the author back
 * once the lease's lifetime ends.
 *
 * The harness replica consumes the activity lane only (FEED_LANES=activity), so a planned fan-out's
 * chunks wait on feed-service.fanout until a test starts a fan-out replica: each test decides when
 * chunks run, and row locks it holds on chunks decide how far they get. Nothing waits for time.
 */
const LEASE_MS = 60_000;
const log = captureLogger('lease', 'warn');
let h: Harness;
const replicas: FeedService[] = [];
const lockers: pg.Client[] = [];

beforeAll(async () => {
  h = await startHarness('lease', {
    env: { FEED_LANES: 'activity', FEED_FANOUT_CHUNK_SIZE: '10', FEED_AUTHOR_LEASE_MS: String(LEASE_MS) },
    logger: log.logger,
  });
}, 60_000);
afterEach(async () => {
  for (const r of replicas.splice(0)) {
    await r.stop();
    await r.app.close();
  }
  for (const l of lockers.splice(0)) await l.end().catch(() => undefined);
});
afterAll(async () => h?.close());

async function startFanoutReplica(): Promise<FeedService> {
  const config = testConfig(h.db, h.vhost, h.prefix, {
    env: { FEED_LANES: 'fanout', FEED_FANOUT_CHUNK_SIZE: '10', FEED_AUTHOR_LEASE_MS: String(LEASE_MS) },
  });
  const replica = createFeedService(config, {
    logger: testLogger('lease-fanout'),
    registry: new Registry(),
    topology: FAST_RETRY_TOPOLOGY,
  });
  replicas.push(replica);
  await replica.start();
  return replica;
}

/** Holds row locks on the given chunks in a transaction of its own until `release()`. */
async function lockChunks(postId: string, chunkNos: number[]): Promise<{ pid: number; release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: h.db.url });
  lockers.push(c);
  await c.connect();
  await c.query('BEGIN');
  await c.query('SELECT 1 FROM feed_fanout_chunks WHERE post_id = $1 AND chunk_no = ANY($2::int[]) FOR UPDATE', [
    postId,
    chunkNos,
  ]);
  const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  return { pid, release: async () => void (await c.query('ROLLBACK')) };
}

/** The one of `pids` a backend of the service is waiting for (a chunk writer blocked on that lock), if any. */
async function blockedOn(pids: number[]): Promise<number | undefined> {
  const { rows } = await h.pool.query<{ pid: number }>(
    `SELECT b.pid FROM pg_stat_activity a CROSS JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS b(pid) WHERE b.pid = ANY($1::int[])`,
    [pids],
  );
  return rows[0]?.pid;
}

const leaseKey = (author: string) => `author:${author}`;

async function job(postId: string): Promise<{
  doneAt: Date | null;
  chunks: Array<{ chunkNo: number; attempts: number; doneAt: Date | null; written: number | null }>;
}> {
  const j = await h.pool.query<{ done_at: Date | null }>('SELECT done_at FROM feed_fanout_jobs WHERE post_id = $1', [
    postId,
  ]);
  const c = await h.pool.query<{ chunk_no: number; attempts: number; done_at: Date | null; written: number | null }>(
    'SELECT chunk_no, attempts, done_at, written FROM feed_fanout_chunks WHERE post_id = $1 ORDER BY chunk_no',
    [postId],
  );
  return {
    doneAt: j.rows[0]?.done_at ?? null,
    chunks: c.rows.map((r) => ({ chunkNo: r.chunk_no, attempts: r.attempts, doneAt: r.done_at, written: r.written })),
  };
}

async function plannedPost(author: string, postId: string, chunks: number): Promise<void> {
  await h.publish(event('post.published', { postId, authorId: author, title: postId, excerpt: '' }));
  await eventually(`${postId} planned`, async () => (await job(postId)).chunks.length === chunks, 30_000, 20);
}

/** The plan commits before its handler takes the lease: wait for the lease itself. */
const leaseHeldBy = (author: string, holder: string) =>
  eventually(`the lease held by ${holder}`, async () => (await h.redis.get(leaseKey(author))) === holder, 30_000, 20);

/** The log line of the runtime scheduling a retry of `postId`'s post.published because its author was busy. */
const authorBusyRetry = (postId: string) => () =>
  log.lines.some(
    (l) => l.msg === 'handler failed; scheduled retry' && String(l.err).includes(`post '${postId}' waits for it`),
  );

it('gives the lease to exactly one of many concurrent fan-outs, with a lifetime, and only its holder extends or releases it', async () => {
  const author = `one-${randomUUID().slice(0, 8)}`;
  const cache = h.service.cache;
  const holders = Array.from({ length: 8 }, (_, i) => `post-${i}`);
  const won = await Promise.all(holders.map((p) => cache.acquireAuthor(author, p, LEASE_MS)));
  expect(won.filter(Boolean)).toHaveLength(1);
  const owner = holders[won.indexOf(true)];
  const other = holders.find((p) => p !== owner) ?? '';
  expect(await h.redis.get(leaseKey(author))).toBe(owner);
  const ttl = await h.redis.pttl(leaseKey(author));
  expect(ttl).toBeGreaterThan(0); // it expires on its own (a crashed holder)…
  expect(ttl).toBeLessThanOrEqual(LEASE_MS); // …after FEED_AUTHOR_LEASE_MS

  expect(await cache.acquireAuthor(author, owner, LEASE_MS)).toBe(true); // its own plan, redelivered
  expect(await cache.acquireAuthor(author, other, LEASE_MS)).toBe(false);
  await h.redis.pexpire(leaseKey(author), 20_000);
  await cache.extendAuthor(author, other, LEASE_MS);
  await cache.releaseAuthor(author, other);
  expect(await h.redis.get(leaseKey(author))).toBe(owner);
  expect(await h.redis.pttl(leaseKey(author))).toBeLessThanOrEqual(20_000);
  await cache.extendAuthor(author, owner, LEASE_MS);
  expect(await h.redis.pttl(leaseKey(author))).toBeGreaterThan(20_000);
  await cache.releaseAuthor(author, owner);
  expect(await h.redis.exists(leaseKey(author))).toBe(0);
});

it('sends a second fan-out of the same author to a retry (AUTHOR_BUSY) while the first runs, and runs it once the first has finished', async () => {
  const author = `busy-${randomUUID().slice(0, 8)}`;
  const followers = await seedFollowers(h, author, 30); // 3 chunks
  const [first, second] = [`p1-${randomUUID()}`, `p2-${randomUUID()}`];
  await plannedPost(author, first, 3);
  await leaseHeldBy(author, first);

  await plannedPost(author, second, 3);
  await eventually('the second post retried because its author is busy', authorBusyRetry(second), 30_000, 20);
  // None of its chunks was sent or started: it waits for the lease, which the first still holds.
  expect((await job(second)).chunks.map((c) => c.attempts)).toEqual([0, 0, 0]);
  expect(await h.redis.get(leaseKey(author))).toBe(first);

  await startFanoutReplica();
  await eventually(
    'both fan-outs done',
    async () => (await job(first)).doneAt !== null && (await job(second)).doneAt !== null,
    60_000,
  );
  const [a, b] = [await job(first), await job(second)];
  // The second ran after the first had finished (one clock: Postgres's): its chunks were sent only once it got the lease.
  const firstDone = a.doneAt?.getTime() ?? Number.POSITIVE_INFINITY;
  for (const c of b.chunks) expect(c.doneAt?.getTime() ?? 0).toBeGreaterThan(firstDone);
  expect(b.chunks.map((c) => c.attempts)).toEqual([1, 1, 1]);
  expect(await feedsHolding(h.redis, followers, first)).toBe(30);
  expect(await feedsHolding(h.redis, followers, second)).toBe(30);
  await eventually('the lease released by the last chunk', async () => (await h.redis.exists(leaseKey(author))) === 0);
}, 120_000);

it('is extended by every chunk: its expiry moves forward as each chunk commits, and the last chunk releases it', async () => {
  const author = `ext-${randomUUID().slice(0, 8)}`;
  await seedFollowers(h, author, 40); // 4 chunks
  const postId = `p-${randomUUID()}`;
  await plannedPost(author, postId, 4);
  await leaseHeldBy(author, postId);
  // One lock per chunk: the writer can run exactly the chunk the test releases, and stops at the next.
  const locks = await Promise.all([0, 1, 2, 3].map((n) => lockChunks(postId, [n])));
  await startFanoutReplica();

  const MARK_MS = 20_000; // below FEED_AUTHOR_LEASE_MS: only an extension can bring the expiry above it
  for (let step = 0; step < 4; step++) {
    const pid = await eventually(
      `the chunk writer blocked (step ${step})`,
      () => blockedOn(locks.map((l) => l.pid)),
      30_000,
      20,
    );
    const chunkNo = locks.findIndex((l) => l.pid === pid);
    expect((await job(postId)).chunks[chunkNo].doneAt).toBeNull();
    await h.redis.pexpire(leaseKey(author), MARK_MS);
    await locks[chunkNo].release();
    await eventually(
      `chunk ${chunkNo} committed`,
      async () => (await job(postId)).chunks[chunkNo].doneAt !== null,
      30_000,
      20,
    );
    if (step < 3) {
      expect(await h.redis.get(leaseKey(author))).toBe(postId);
      expect(await h.redis.pttl(leaseKey(author))).toBeGreaterThan(MARK_MS);
    } else {
      await eventually('the last chunk released the lease', async () => (await h.redis.exists(leaseKey(author))) === 0);
    }
    expect((await job(postId)).chunks.filter((c) => c.doneAt !== null)).toHaveLength(step + 1);
  }
  expect((await job(postId)).doneAt).not.toBeNull();
}, 120_000);

it('is taken over once the lease of a holder that crashed has expired, and that fan-out completes exactly once', async () => {
  const author = `crash-${randomUUID().slice(0, 8)}`;
  const followers = await seedFollowers(h, author, 20); // 2 chunks
  // What a fan-out killed mid-way leaves: its lease, taken the way the service takes it, never released.
  expect(await h.service.cache.acquireAuthor(author, 'crashed-post', LEASE_MS)).toBe(true);
  const ttl = await h.redis.pttl(leaseKey(author));
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(LEASE_MS);
  await startFanoutReplica();

  const postId = `p-${randomUUID()}`;
  await plannedPost(author, postId, 2);
  await eventually('the post retried while the crashed holder’s lease lives', authorBusyRetry(postId), 30_000, 20);
  expect((await job(postId)).chunks.map((c) => c.attempts)).toEqual([0, 0]);
  expect(await h.redis.get(leaseKey(author))).toBe('crashed-post');

  // The lease's lifetime ends (its expiry moved into the past rather than waited for: Redis drops it).
  await h.redis.pexpireat(leaseKey(author), 1);
  await eventually('the fan-out done after the takeover', async () => (await job(postId)).doneAt !== null, 60_000);
  const done = await job(postId);
  expect(done.chunks.map((c) => c.attempts)).toEqual([1, 1]);
  expect(done.chunks.reduce((n, c) => n + (c.written ?? 0), 0)).toBe(20);
  expect(await feedsHolding(h.redis, followers, postId)).toBe(20);
  const pipe = h.redis.pipeline();
  for (const u of followers) pipe.zcard(`f:${u}`);
  expect(((await pipe.exec()) ?? []).map(([, n]) => n)).toEqual(followers.map(() => 1));
  await eventually('the lease released by the last chunk', async () => (await h.redis.exists(leaseKey(author))) === 0);
}, 120_000);
