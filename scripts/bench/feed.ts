/**
 * npm run bench:feed — feed-service built by its own builder (createFeedService) in this process,
 * on its own vhost, database and a private redis-server (never the shared one), measured in one run:
 *
 * 1. Fan-out: BENCH_FOLLOWERS (default 1,000,000) active, materialised followers of one author;
 *    post.published published → the fan-out job's last chunk checkpointed (every entry written).
 *    Baseline in the same run, on the same Redis: the same entries (ZADD + ZREMRANGEBYRANK per
 *    follower, the cap) written by pipelines of the same size, ids already in memory, no broker,
 *    no Postgres.
 * 2. Lanes: a post of an author with 10 followers, publish → all 10 entries written, on the idle
 *    service (median of BENCH_LANE_SAMPLES), then the same while the fan-out of (1) runs.
 * 3. Reads at BENCH_READ_RATE req/s (default 500) for BENCH_READ_SECONDS over HTTP (keep-alive)
 *    of BENCH_READERS users' first pages (20 items), p50/p99 and the hit ratio, beside a raw
 *    ZRANGE … REV + MGET of the same page at the same rate; then the same reads with Redis stopped
 *    (every read answered from Postgres).
 *
 * Env: BENCH_FOLLOWERS, BENCH_LANE_SAMPLES (5), BENCH_READ_RATE (500), BENCH_READ_SECONDS (10),
 * BENCH_READERS (1000), FEED_FANOUT_CONCURRENCY / FEED_FANOUT_CHUNK_SIZE (the service's tunables).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { buildEvent } from '@community/contracts';
import { createTestDatabase, createTestVhost } from '@community/testing';
import { createFeedService, loadFeedConfig } from '../../apps/feed-service/src';

const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1_000_000);
const LANE_SAMPLES = Number(process.env.BENCH_LANE_SAMPLES ?? 5);
const READ_RATE = Number(process.env.BENCH_READ_RATE ?? 500);
const READ_SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 10);
const READERS = Number(process.env.BENCH_READERS ?? 1000);
const PREFIX = 'bench:';
const DAY = 86_400_000;

const log = (...args: unknown[]) => console.log(new Date().toISOString().slice(11, 19), ...args);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

async function privateRedis(port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    const ok = await c.connect().then(() => c.ping(), () => undefined);
    c.disconnect();
    if (ok === 'PONG') return proc;
    await sleep(50);
  }
  throw new Error('private redis-server did not start');
}

async function main(): Promise<void> {
  const redisPort = await freePort();
  let redisProc = await privateRedis(redisPort);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const [db, vhost] = await Promise.all([createTestDatabase('bench_feed'), createTestVhost('bench-feed')]);
  const config = loadFeedConfig({
    ...process.env,
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    REDIS_URL: redisUrl,
    FEED_REDIS_PREFIX: PREFIX,
    FEED_LARGE_AUTHOR_THRESHOLD: String(FOLLOWERS + 1),
    LOG_LEVEL: 'warn',
    PORT: '0',
    DATABASE_POOL_MAX: '12',
  });
  const logger = pino({ level: 'error' });
  const service = createFeedService(config, { logger, registry: new Registry() });
  await service.start();
  const address = await service.app.listen({ port: 0, host: '127.0.0.1' });
  const redis = new Redis(redisUrl, { keyPrefix: PREFIX });
  const pool = service.pool;
  const ttl = config.FEED_ACTIVE_WINDOW_DAYS * DAY;
  log(`feed-service on ${address}; private redis :${redisPort}; chunk ${config.FEED_FANOUT_CHUNK_SIZE}, fan-out concurrency ${config.FEED_FANOUT_CONCURRENCY}`);

  try {
    // ---- seed ----------------------------------------------------------------------------
    const t0 = performance.now();
    const id = (p: string, i: number) => `${p}-${String(i).padStart(7, '0')}`;
    async function seed(author: string, p: string, n: number) {
      await pool.query(`INSERT INTO feed_follows SELECT $1 || '-' || lpad(i::text, 7, '0'), $2, true, now() - interval '1 day' FROM generate_series(1, $3::int) i`, [p, author, n]);
      await pool.query(`INSERT INTO feed_user_activity SELECT $1 || '-' || lpad(i::text, 7, '0'), now() FROM generate_series(1, $2::int) i ON CONFLICT DO NOTHING`, [p, n]);
      await pool.query(`INSERT INTO feed_authors (author_id, follower_count) VALUES ($1, $2)`, [author, n]);
      for (let i = 1; i <= n; i += 10_000) {
        const pipe = redis.pipeline();
        for (let j = i; j < Math.min(n + 1, i + 10_000); j++) pipe.set(`live:${id(p, j)}`, '1', 'PX', ttl).set(`ready:${id(p, j)}`, '1', 'PX', ttl);
        await pipe.exec();
      }
    }
    await seed('big', 'bf', FOLLOWERS);
    await seed('small', 'sf', 10);
    await pool.query('ANALYZE');
    log(`seeded ${FOLLOWERS.toLocaleString()} + 10 followers in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // ---- raw baseline: the same entries, pipelined, no broker, no Postgres ---------------
    const at = Date.now();
    const chunk = config.FEED_FANOUT_CHUNK_SIZE;
    const tb = performance.now();
    for (let i = 1; i <= FOLLOWERS; i += chunk) {
      const pipe = redis.pipeline();
      for (let j = i; j < Math.min(FOLLOWERS + 1, i + chunk); j++) pipe.zadd(`raw:${id('bf', j)}`, at, 'raw-post').zremrangebyrank(`raw:${id('bf', j)}`, 0, -(config.FEED_CAP + 1));
      await pipe.exec();
    }
    const rawSeconds = (performance.now() - tb) / 1000;
    log(`raw baseline: ${FOLLOWERS.toLocaleString()} entries in ${rawSeconds.toFixed(2)} s = ${Math.round(FOLLOWERS / rawSeconds).toLocaleString()} entries/s`);

    // ---- lanes, idle ----------------------------------------------------------------------
    const smallFollowers = Array.from({ length: 10 }, (_, i) => id('sf', i + 1));
    let seq = 0;
    async function smallPostLatency(): Promise<number> {
      const postId = `small-${++seq}`;
      const start = performance.now();
      await service.messaging!.publisher.publish(buildEvent('post.published', { postId, authorId: 'small', title: 't', excerpt: 'e' }, { producer: 'bench' }));
      for (;;) {
        const pipe = redis.pipeline();
        for (const u of smallFollowers) pipe.zscore(`f:${u}`, postId);
        const res = (await pipe.exec()) ?? [];
        if (res.every(([, v]) => v !== null)) return performance.now() - start;
        await sleep(1);
      }
    }
    const idle: number[] = [];
    for (let i = 0; i < LANE_SAMPLES + 1; i++) {
      const v = await smallPostLatency();
      if (i > 0) idle.push(v); // the first warms up
      await sleep(100);
    }
    log(`lanes, idle: 10-follower post publish → all entries p50 ${ms(pct(idle, 50))} (max ${ms(Math.max(...idle))})`);

    // ---- fan-out of the big post, with small posts during it --------------------------------
    const bigId = 'big-post';
    const tf = performance.now();
    await service.messaging!.publisher.publish(buildEvent('post.published', { postId: bigId, authorId: 'big', title: 'big', excerpt: 'to a million' }, { producer: 'bench' }));
    const busy: number[] = [];
    let done = false;
    let fanoutSeconds = NaN;
    const watcher = (async () => {
      while (!done) {
        const { rows } = await pool.query(`SELECT done_at FROM feed_fanout_jobs WHERE post_id = $1`, [bigId]);
        if (rows[0]?.done_at) {
          fanoutSeconds = (performance.now() - tf) / 1000;
          done = true;
        } else await sleep(20);
      }
    })();
    // Small posts while chunks are being written (wait for the first checkpoint, so the fan-out is really running).
    for (;;) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM feed_fanout_chunks WHERE post_id = $1 AND done_at IS NOT NULL`, [bigId]);
      if (rows[0].n > 0 || done) break;
      await sleep(10);
    }
    while (!done && busy.length < LANE_SAMPLES * 4) {
      busy.push(await smallPostLatency());
      await sleep(250);
    }
    await watcher;
    const { rows: fin } = await pool.query(`SELECT sum(written)::int AS written, count(*)::int AS chunks, sum(attempts)::int AS attempts FROM feed_fanout_chunks WHERE post_id = $1`, [bigId]);
    log(`fan-out: ${FOLLOWERS.toLocaleString()} followers in ${fanoutSeconds.toFixed(2)} s = ${Math.round(FOLLOWERS / fanoutSeconds).toLocaleString()} entries/s (written ${fin[0].written}, ${fin[0].chunks} chunks, ${fin[0].attempts} attempts)`);
    log(`fan-out vs raw baseline: ${(rawSeconds / fanoutSeconds).toFixed(2)}× (target ≥ 0.5×)`);
    if (busy.length > 0) {
      log(`lanes, during the fan-out: p50 ${ms(pct(busy, 50))} (max ${ms(Math.max(...busy))}, ${busy.length} posts) vs idle p50 ${ms(pct(idle, 50))}: ${(pct(busy, 50) / pct(idle, 50)).toFixed(2)}× (target ≤ 2×)`);
    } else log('lanes, during the fan-out: the fan-out ended before a small post could be measured (raise BENCH_FOLLOWERS)');

    // ---- reads ------------------------------------------------------------------------------
    // READERS users following 'small' (materialised), 50 posts of 'small' in each feed.
    await pool.query(`INSERT INTO feed_follows SELECT 'rd-' || lpad(i::text, 7, '0'), 'small', true, now() - interval '1 day' FROM generate_series(1, $1::int) i`, [READERS]);
    await pool.query(`INSERT INTO feed_user_activity SELECT 'rd-' || lpad(i::text, 7, '0'), now() FROM generate_series(1, $1::int) i`, [READERS]);
    const readers = Array.from({ length: READERS }, (_, i) => id('rd', i + 1));
    for (const u of readers) await redis.set(`live:${u}`, '1', 'PX', ttl);
    for (let i = 0; i < 50; i++) {
      await service.messaging!.publisher.publish(buildEvent('post.published', { postId: `rp-${i}`, authorId: 'small', title: `read ${i}`, excerpt: 'x'.repeat(120) }, { producer: 'bench' }));
    }
    while ((await pool.query(`SELECT count(*)::int AS n FROM feed_fanout_jobs WHERE post_id LIKE 'rp-%' AND done_at IS NOT NULL`)).rows[0].n < 50) await sleep(50);
    for (const u of readers) await redis.set(`ready:${u}`, '1', 'PX', ttl);
    const tokens = readers.map((u) => service.app.jwt.sign({ sub: u }));

    async function atRate(what: string, call: (i: number) => Promise<unknown>): Promise<number[]> {
      const total = READ_RATE * READ_SECONDS;
      const lat: number[] = [];
      const start = performance.now();
      const inflight: Promise<void>[] = [];
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / READ_RATE;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        inflight.push(
          call(i).then(() => {
            lat.push(performance.now() - due); // open loop: from when the request was due
          }),
        );
      }
      await Promise.all(inflight);
      const elapsed = (performance.now() - start) / 1000;
      log(`${what}: ${total} at ${READ_RATE}/s (achieved ${(total / elapsed).toFixed(0)}/s): p50 ${ms(Math.max(0, pct(lat, 50)))}, p99 ${ms(pct(lat, 99))}`);
      return lat;
    }
    const api = (i: number) =>
      fetch(`${address}/v1/users/${readers[i % READERS]}/feed?limit=20`, { headers: { authorization: `Bearer ${tokens[i % READERS]}` } }).then(async (r) => {
        if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
        const body = (await r.json()) as { items: unknown[] };
        if (body.items.length !== 20) throw new Error(`page of ${body.items.length}`);
      });
    const raw = async (i: number) => {
      const ids = await redis.zrange(`f:${readers[i % READERS]}`, '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 20);
      await redis.mget(ids.map((x) => `p:${x}`));
    };
    const reads = async () => Object.fromEntries((await service.metrics.cacheReads.get()).values.map((v) => [v.labels.result, v.value]));
    await atRate('warm-up (API)', api);
    const before = await reads();
    const rawLat = await atRate('raw ZRANGE REV + MGET', raw);
    const apiLat = await atRate('feed API (Redis up)', api);
    const after = await reads();
    const hits = (after.hit ?? 0) - (before.hit ?? 0);
    const all = Object.keys(after).reduce((n, k) => n + (after[k] ?? 0) - (before[k] ?? 0), 0);
    log(`hit ratio ${(hits / all).toFixed(3)}; API p99 vs raw p99: ${(pct(apiLat, 99) / pct(rawLat, 99)).toFixed(2)}× (target ≤ 3×)`);

    redisProc.kill('SIGKILL');
    await once(redisProc, 'exit');
    while (service.cache.available()) await sleep(20);
    const fb0 = (await reads()).fallback ?? 0;
    await atRate('feed API (Redis down, Postgres fallback)', api);
    log(`fallback reads counted: ${((await reads()).fallback ?? 0) - fb0}`);
    redisProc = await privateRedis(redisPort);
  } finally {
    await service.stop();
    await service.app.close();
    redis.disconnect();
    redisProc.kill('SIGKILL');
    await Promise.all([db.drop(), vhost.delete()]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
