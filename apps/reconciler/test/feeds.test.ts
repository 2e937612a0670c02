// The reconciler against feed-service's Redis feeds: a real Redis (this file's own key prefix,
// removed at the end; never FLUSHALL) and a private database with every migration, the projections
// seeded as feed-service writes them. The broker is not involved (fanout-stuck.test.ts is).
import Redis from 'ioredis';
import { createTestDatabase, type TestDatabase, testRedisPrefix } from '@community/testing';
import { FEED_CHECK_JOB } from '../src/jobs/feeds';
import { bearer, OPERATORS, startReconciler, type Reconciler } from './harness';
import { runOpsCli } from './ops-cli';

const HOUR = 3_600_000;
const prefix = testRedisPrefix('reconfeed');
const USERS = ['u1', 'u2', 'u3', 'u4'];

let db: TestDatabase;
let rc: Reconciler;
let redis: Redis;
let base: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const q = <R extends Record<string, any> = any>(sql: string, params?: unknown[]) => rc.svc.pool.query<R>(sql, params);

beforeAll(async () => {
  db = await createTestDatabase('rc_feeds');
  rc = await startReconciler(db, undefined, { env: { FEED_REDIS_PREFIX: prefix } });
  base = await rc.svc.app.listen({ host: '127.0.0.1', port: 0 });
  redis = new Redis('redis://127.0.0.1:6379', { keyPrefix: prefix });

  // Two authors, four materialised readers following both, and u5 following both without a feed.
  await q(`INSERT INTO feed_user_activity (user_id, last_active_at) SELECT u, now() FROM unnest($1::text[]) u`, [
    [...USERS, 'u5'],
  ]);
  await q(
    `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at) SELECT u, a, true, now() - interval '1 day' FROM unnest($1::text[]) u, unnest(ARRAY['a1', 'a2']) a`,
    [[...USERS, 'u5']],
  );
  await q(
    `INSERT INTO feed_posts (post_id, author_id, title, excerpt, published_at, pushed)
     SELECT 'p' || i, CASE WHEN i % 2 = 0 THEN 'a1' ELSE 'a2' END, 'post ' || i, '', now() - i * interval '1 hour', true FROM generate_series(1, 6) i`,
  );
  for (const u of USERS) {
    const res = await rc.svc.app.inject({
      method: 'POST',
      url: '/v1/admin/feeds/rebuild',
      headers: bearer(rc.token()),
      payload: { userId: u },
    });
    expect(res.json()).toMatchObject({ checked: 1, rebuilt: 1 });
  }
});

afterAll(async () => {
  await rc?.close();
  if (redis) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      // keyPrefix is applied to UNLINK's arguments: strip it from SCAN's raw answers.
      if (keys.length) await redis.unlink(...keys.map((k) => k.slice(prefix.length)));
    } while (cursor !== '0');
    redis.disconnect();
  }
  await db?.drop();
});

/** The materialised feed as Redis holds it: "post@ms", newest first. */
async function cached(user: string): Promise<string[]> {
  const raw = await redis.zrange(`f:${user}`, 0, -1, 'REV', 'WITHSCORES');
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) out.push(`${raw[i]}@${raw[i + 1]}`);
  return out;
}

/** What the feed should hold, straight from the projections (written here, not by the code under test). */
async function truth(user: string): Promise<string[]> {
  const res = await q<{ e: string }>(
    `SELECT p.post_id || '@' || (extract(epoch FROM p.published_at) * 1000)::bigint AS e
       FROM feed_posts p JOIN feed_follows f ON f.followee_id = p.author_id AND f.follower_id = $1 AND f.active
      WHERE p.pushed ORDER BY p.published_at DESC, p.post_id DESC`,
    [user],
  );
  return res.rows.map((r) => r.e);
}

async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const u of [...USERS, 'u5']) out[u] = { feed: await cached(u), ready: await redis.exists(`ready:${u}`) };
  return out;
}

const ops = (...args: string[]) =>
  runOpsCli(args, { RECONCILER_URL: base, OPS_TOKEN: '', ...OPERATORS.cliEnv('operator') });

const metric = async (name: string, labels: Record<string, string> = {}) =>
  (await rc.registry.getSingleMetric(name)!.get()).values.find((v) =>
    Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  )?.value ?? 0;

it('materialises exactly what the projections say', async () => {
  for (const u of USERS) {
    expect(await cached(u)).toEqual(await truth(u));
    expect(await cached(u)).toHaveLength(6);
  }
});

it('the scheduled check finds the drifted feeds, rebuilds exactly those, and ignores a fan-out still in flight', async () => {
  await redis.zadd('f:u1', Date.now() - HOUR / 2, 'ghost'); // an entry the projections never had
  await redis.zrem('f:u2', 'p3'); // a lost fan-out write
  // Published a moment ago and in no feed yet: its fan-out may still be running, not drift.
  await q(
    `INSERT INTO feed_posts (post_id, author_id, title, excerpt, published_at, pushed) VALUES ('fresh', 'a1', 'fresh', '', now(), true)`,
  );
  const untouched = { u3: await cached('u3'), u4: await cached('u4') };

  const run = await rc.svc.scheduler.runOnce(FEED_CHECK_JOB, { force: true });
  expect(run).toMatchObject({ status: 'ran', outcome: 'succeeded', counts: { checked: 4, mismatched: 2, rebuilt: 2 } });
  expect(await cached('u1')).toEqual(await truth('u1'));
  expect(await cached('u1')).not.toContain(expect.stringMatching(/^ghost@/));
  expect(await cached('u2')).toEqual(await truth('u2'));
  expect({ u3: await cached('u3'), u4: await cached('u4') }).toEqual(untouched);
  expect(await redis.exists('ready:u1', 'ready:u2')).toBe(2);
  expect(await metric('reconciler_feeds_checked_total', { source: 'job' })).toBe(4);
  expect(await metric('reconciler_feeds_mismatched_total', { source: 'job' })).toBe(2);
  expect(await metric('reconciler_feeds_rebuilt_total', { source: 'job' })).toBe(2);
  // The run is recorded with its counts (GET /v1/admin/jobs).
  const jobs = (
    await rc.svc.app.inject({ method: 'GET', url: '/v1/admin/jobs', headers: bearer(rc.token()) })
  ).json() as { jobs: Array<{ job: string; lastRun: { counts: unknown } | null }> };
  expect(jobs.jobs.find((j) => j.job === FEED_CHECK_JOB)?.lastRun?.counts).toMatchObject({
    checked: 4,
    mismatched: 2,
    rebuilt: 2,
  });
});

it('a dry-run rebuild reports what differs and changes nothing', async () => {
  await redis.zrem('f:u3', 'p1');
  await redis.zadd('f:u4', Date.now() - HOUR / 2, 'ghost');
  const before = await snapshot();
  const res = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/feeds/rebuild',
    headers: bearer(rc.token()),
    payload: { all: true, dryRun: true },
  });
  expect(res.statusCode).toBe(200);
  const body = res.json() as {
    feeds: Array<{
      userId: string;
      missing: Array<{ postId: string }>;
      extra: Array<{ postId: string }>;
      rebuilt: boolean;
    }>;
  };
  expect(body).toMatchObject({ dryRun: true, all: true, checked: 4, mismatched: 2, rebuilt: 0 });
  const byUser = Object.fromEntries(body.feeds.map((f) => [f.userId, f]));
  expect(byUser.u3).toMatchObject({ missing: [{ postId: 'p1' }], extra: [], rebuilt: false });
  expect(byUser.u4).toMatchObject({ missing: [], extra: [{ postId: 'ghost' }], rebuilt: false });
  expect(await snapshot()).toEqual(before);

  const dryOne = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/feeds/rebuild',
    headers: bearer(rc.token()),
    payload: { userId: 'u5', dryRun: true },
  });
  expect(dryOne.json()).toMatchObject({ checked: 1, rebuilt: 0 });
  expect(await redis.exists('ready:u5', 'live:u5', 'f:u5')).toBe(0);
});

it('refuses a request naming neither or both of userId and all', async () => {
  for (const payload of [{}, { userId: 'u1', all: true }, { all: false }]) {
    const res = await rc.svc.app.inject({
      method: 'POST',
      url: '/v1/admin/feeds/rebuild',
      headers: bearer(rc.token()),
      payload,
    });
    expect(res.statusCode).toBe(400);
  }
  const user = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/feeds/rebuild',
    headers: bearer(rc.token('someone', 'user')),
    payload: { all: true },
  });
  expect(user.statusCode).toBe(403);
});

it('`ops feed rebuild --all` rebuilds every materialised feed, and only those', async () => {
  const dry = await ops('feed', 'rebuild', '--all', '--dry-run');
  expect(dry.code).toBe(0);
  expect(dry.stdout).toMatch(/dry run: 4 feeds checked, 2 differ, 0 rebuilt/);
  expect(dry.stdout).toMatch(/^ {2}u3: 1 missing \(p1\), 0 extra$/m);
  expect(dry.stdout).toMatch(/^ {2}u4: 0 missing, 1 extra \(ghost\)$/m);

  const res = await ops('feed', 'rebuild', '--all', '--json');
  expect(res.code).toBe(0);
  expect(JSON.parse(res.stdout)).toMatchObject({ all: true, dryRun: false, checked: 4, mismatched: 2, rebuilt: 4 });
  for (const u of USERS) expect(await cached(u)).toEqual(await truth(u));
  expect(await redis.exists('ready:u5', 'f:u5')).toBe(0);
  expect(await metric('reconciler_feeds_rebuilt_total', { source: 'api' })).toBe(4 + 4); // the four in beforeAll

  const usage = await ops('feed', 'rebuild');
  expect(usage.code).not.toBe(0);
  expect(usage.stderr).toMatch(/exactly one of --user U or --all/);
});
