// A stuck feed-service fan-out chunk, end to end: a real feed-service and the reconciler on one
// database and a vhost of their own, and a real Redis (this file's own key prefix, removed at the
// end; never FLUSHALL). The chunk's message is "lost" (never published); the reconciler reports it
// and re-publishes it, and feed-service's handler finishes the fan-out.
import Redis from 'ioredis';
import { Registry } from 'prom-client';
import { createFeedService, loadFeedConfig, type FeedService } from '@community/feed-service';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
  testRedisPrefix,
} from '@community/testing';
import { STUCK_WORK_JOB } from '../src/jobs/stuck';
import { bearer, JWT_SECRET, startReconciler, type Reconciler } from './harness';

const prefix = testRedisPrefix('reconfanout');

let db: TestDatabase;
let vhost: TestVhost;
let rc: Reconciler;
let feed: FeedService;
let redis: Redis;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const q = <R extends Record<string, any> = any>(sql: string, params?: unknown[]) => rc.svc.pool.query<R>(sql, params);

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('rc_fanout'), createTestVhost('rc-fanout')]);
  feed = createFeedService(
    loadFeedConfig({
      DATABASE_URL: db.url,
      AMQP_URL: vhost.url,
      JWT_SECRET,
      PORT: '0',
      LOG_LEVEL: 'silent',
      FEED_REDIS_PREFIX: prefix,
      SHUTDOWN_TIMEOUT_MS: '3000',
    }),
    { logger: testLogger('feed-service'), registry: new Registry() },
  );
  await feed.start();
  rc = await startReconciler(db, vhost, {
    dlqConsole: false,
    env: { FEED_REDIS_PREFIX: prefix, STUCK_FANOUT_AFTER_MS: '1000' },
  });
  redis = new Redis('redis://127.0.0.1:6379', { keyPrefix: prefix });
});

afterAll(async () => {
  await rc?.close();
  await feed?.stop();
  await feed?.app.close();
  if (redis) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.unlink(...keys.map((k) => k.slice(prefix.length)));
    } while (cursor !== '0');
    redis.disconnect();
  }
  await Promise.all([db?.drop(), vhost?.delete()]);
});

async function cached(user: string): Promise<string[]> {
  return redis.zrange(`f:${user}`, 0, -1);
}

const metric = async (name: string, labels: Record<string, string> = {}) =>
  (await rc.registry.getSingleMetric(name)!.get()).values.find((v) =>
    Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  )?.value ?? 0;

it('reports a stuck fan-out chunk, re-publishes it to feed-service.fanout, and it ends with one entry per follower', async () => {
  const followers = ['s-1', 's-2', 's-3', 's-4', 's-5', 's-6'];
  await q(`INSERT INTO feed_user_activity (user_id, last_active_at) SELECT u, now() FROM unnest($1::text[]) u`, [
    followers,
  ]);
  await q(
    `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at) SELECT u, 's1', true, now() - interval '1 day' FROM unnest($1::text[]) u`,
    [followers],
  );
  for (const u of followers) await redis.set(`live:${u}`, '1', 'PX', 3_600_000);
  await q(
    `INSERT INTO feed_posts (post_id, author_id, title, excerpt, published_at, pushed) VALUES ('sp1', 's1', 'stuck', '', now() - interval '1 hour', true)`,
  );
  // Planned an hour ago as two chunks whose messages never arrived (chunk 0 started once and died).
  await q(
    `INSERT INTO feed_fanout_jobs (post_id, author_id, published_at, active_since, chunks_total, planned_at) VALUES ('sp1', 's1', now() - interval '1 hour', now() - interval '30 days', 2, now() - interval '1 hour')`,
  );
  await q(
    `INSERT INTO feed_fanout_chunks (post_id, chunk_no, after_follower, through_follower, attempts) VALUES ('sp1', 0, '', 's-3', 1), ('sp1', 1, 's-3', 's-6', 0)`,
  );

  const status = (
    await rc.svc.app.inject({ method: 'GET', url: '/v1/admin/status', headers: bearer(rc.token()) })
  ).json() as { checks: Array<{ name: string; ok: boolean; value: unknown; runbook: string }> };
  expect(status.checks.find((c) => c.name === 'fanout-chunks')).toMatchObject({
    ok: false,
    value: 2,
    runbook: 'docs/RUNBOOK.md#check-fanout-chunks',
  });

  const run = await rc.svc.scheduler.runOnce(STUCK_WORK_JOB, { force: true });
  expect(run).toMatchObject({
    status: 'ran',
    outcome: 'succeeded',
    counts: { fanout_chunk: 2, fanout_republished: 2 },
  });
  expect(await metric('reconciler_stuck_work', { kind: 'fanout_chunk' })).toBe(2);
  expect(await metric('reconciler_fanout_chunks_republished_total')).toBe(2);

  await eventually('both chunks done by feed-service', async () => {
    const job = await q(`SELECT chunks_done, done_at FROM feed_fanout_jobs WHERE post_id = 'sp1'`);
    return job.rows[0].chunks_done === 2 && job.rows[0].done_at !== null;
  });
  const chunks = await q(`SELECT chunk_no, written FROM feed_fanout_chunks WHERE post_id = 'sp1' ORDER BY chunk_no`);
  expect(chunks.rows).toEqual([
    { chunk_no: 0, written: 3 },
    { chunk_no: 1, written: 3 },
  ]);
  for (const u of followers) expect(await cached(u)).toEqual(['sp1']);
  expect((await Promise.all(followers.map((u) => cached(u)))).flat()).toHaveLength(followers.length);

  const again = await rc.svc.scheduler.runOnce(STUCK_WORK_JOB, { force: true });
  expect(again).toMatchObject({ counts: { fanout_chunk: 0, fanout_republished: 0 } });
  expect(await metric('reconciler_stuck_work', { kind: 'fanout_chunk' })).toBe(0);
});
