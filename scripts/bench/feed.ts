/**
 * npm run bench:feed — feed-service measured from outside: the service runs in replica processes
 * of its own (scripts/bench/feed-replica.ts, built by createFeedService from the environment), the
 * read load in a process of its own (scripts/bench/feed-load.ts), on a private vhost, database and
 * redis-server (never the shared one). This process seeds, publishes and watches.
 *
 * BENCH_SPLIT=1 (default): two replicas, FEED_LANES=activity (post.published, follows, the HTTP
 * reads) and FEED_LANES=fanout (the chunks) — the deployment docs/FEED.md "Lanes" recommends.
 * BENCH_SPLIT=0: one replica with every lane (FEED_LANES=all).
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
 *    ZRANGE … REV + MGET of the same page at the same rate from the same load process; then the
 *    same reads with Redis stopped (every read answered from Postgres).
 * Beside each figure: the replicas' event-loop delay (monitorEventLoopDelay) and server-side
 * request time, the load process's own event-loop delay, and the private Redis's SLOWLOG (> 1 ms).
 *
 * Env: BENCH_FOLLOWERS, BENCH_SPLIT (1), BENCH_AMQP_URL (an existing vhost to use instead of a new one), BENCH_LANE_SAMPLES (5), BENCH_READ_RATE (500),
 * BENCH_READ_SECONDS (20: 10,000 requests a phase, so each p99 rests on 100 samples), BENCH_READERS (1000), FEED_FANOUT_CONCURRENCY / FEED_FANOUT_CHUNK_SIZE /
 * FEED_FANOUT_YIELD_MAX_MS (0: the small lane does not pre-empt) (the service's tunables, passed to the replicas);
 * BENCH_TRACE=<path prefix> (each replica writes its requests, GC pauses and new pg connections per phase, feed-replica.ts).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { buildEvent, COMMUNITY_TOPOLOGY } from '@community/contracts';
import { createPgPool } from '@community/db';
import { createMessaging, managementTargetFor } from '@community/messaging';
import { createTestDatabase, freePort } from '@community/testing';
import { loadFeedConfig } from '../../apps/feed-service/src';

const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 1_000_000);
const SPLIT = (process.env.BENCH_SPLIT ?? '1') !== '0';
const LANE_SAMPLES = Number(process.env.BENCH_LANE_SAMPLES ?? 5);
const READ_RATE = Number(process.env.BENCH_READ_RATE ?? 500);
const READ_SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 20);
const READERS = Number(process.env.BENCH_READERS ?? 1000);
const PREFIX = 'bench:';
const DAY = 86_400_000;

const log = (...args: unknown[]) => console.log(new Date().toISOString().slice(11, 19), ...args);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const ms = (x: number | null) => (x == null || Number.isNaN(x) ? '—' : `${x.toFixed(1)} ms`);

/**
 * CPU time (user + system, seconds) of the processes that do a fan-out, read from /proc (Linux):
 * the replicas, the private redis-server, every postgres process (the shared server's backends),
 * RabbitMQ's beam.smp, and this process. A delta of two snapshots is the work's core-seconds,
 * whatever else the machine runs: the capacity figure (followers per second per core) rests on it.
 */
type CpuSnapshot = Map<string, Map<number, number>>;
function cpuSnapshot(named: Record<string, number | undefined>): CpuSnapshot {
  const ticks = (pid: number): number | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, at USER_HZ 100
    } catch {
      return undefined;
    }
  };
  const snap: CpuSnapshot = new Map();
  const add = (group: string, pid: number) => {
    const t = ticks(pid);
    if (t !== undefined) snap.set(group, (snap.get(group) ?? new Map()).set(pid, t));
  };
  for (const [group, pid] of Object.entries(named)) if (pid) add(group, pid);
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return snap;
  }
  for (const d of pids) {
    let comm = '';
    try {
      comm = readFileSync(`/proc/${d}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm === 'postgres') add('postgres', Number(d));
    else if (comm === 'beam.smp') add('rabbitmq', Number(d));
  }
  return snap;
}
function cpuSeconds(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [group, pids] of after) {
    let s = 0;
    for (const [pid, t] of pids) s += t - (before.get(group)?.get(pid) ?? 0);
    out[group] = s;
  }
  return out;
}

async function privateRedis(port: number): Promise<ChildProcess> {
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--slowlog-log-slower-than',
      '1000',
      '--slowlog-max-len',
      '100000',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    const ok = await c.connect().then(
      () => c.ping(),
      () => undefined,
    );
    c.disconnect();
    if (ok === 'PONG') return proc;
    await sleep(50);
  }
  throw new Error('private redis-server did not start');
}

/**
 * A vhost of the bench's own. Not createTestVhost: its management calls give up after 10 s, and on
 * this shared broker creating or deleting a vhost takes up to a minute while others' suites run
 * (a given-up PUT still creates the vhost later, and leaks it).
 */
async function benchVhost(): Promise<{ url: string; delete(): Promise<void> }> {
  const base = new URL(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
  const name = `test-bench-feed-${process.pid}-${randomBytes(4).toString('hex')}`; // owner pid: npm test's setup keeps it while this runs
  const url = `${base.protocol}//${base.username}:${base.password}@${base.host}/${encodeURIComponent(name)}`;
  const m = managementTargetFor(url, process.env.RABBITMQ_MANAGEMENT_URL);
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${m.baseUrl}/api${path}`, {
      method,
      headers: {
        authorization: `Basic ${Buffer.from(`${m.username}:${m.password}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(180_000),
    });
  const v = encodeURIComponent(name);
  // PUT is idempotent: when the management server drops a slow request, look whether it took effect, else ask again.
  for (const [path, body] of [
    [`/vhosts/${v}`, {}],
    [`/permissions/${v}/${encodeURIComponent(m.username)}`, { configure: '.*', write: '.*', read: '.*' }],
  ] as const) {
    for (let attempt = 1; ; attempt++) {
      const res = await call('PUT', path, body).catch((err: Error) => err);
      if (!(res instanceof Error) && res.ok) break;
      if ((await call('GET', path).catch(() => undefined))?.ok) break;
      if (attempt === 5) throw new Error(`PUT ${path}: ${res instanceof Error ? res.message : `HTTP ${res.status}`}`);
      await sleep(2_000);
    }
  }
  return { url, delete: async () => void (await call('DELETE', `/vhosts/${v}`).catch(() => undefined)) };
}

/** A forked child speaking the request/answer IPC of feed-replica.ts and feed-load.ts. */
interface Child {
  proc: ChildProcess;
  ask<T = Record<string, unknown>>(message: Record<string, unknown>, answer: string): Promise<T>;
}

function forkChild(script: string, env: Record<string, string | undefined>): Child {
  const proc = fork(script, [], {
    env,
    execArgv: ['-r', '@swc-node/register'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return {
    proc,
    ask<T>(message: Record<string, unknown>, answer: string) {
      return new Promise<T>((resolve, reject) => {
        const onMessage = (m: { type: string }) => {
          if (m.type !== answer) return;
          proc.off('message', onMessage);
          proc.off('exit', onExit);
          resolve(m as T);
        };
        const onExit = (code: number) => reject(new Error(`${script} exited (${code}) before '${answer}'`));
        proc.on('message', onMessage);
        proc.once('exit', onExit);
        if (message.type) proc.send(message);
      });
    },
  };
}

interface Stats {
  eldP50: number;
  eldP99: number;
  eldMax: number;
  serverP50: number;
  serverP99: number;
  requests: number;
  reads: Record<string, number>;
  /** feed_fanout_yield_seconds_total by outcome, since the replica started. */
  yielded: Record<string, number>;
  pgMs: number;
  pgCalls: number;
  redisMs: number;
  redisCalls: number;
  gc: { count: number; ms: number; maxMs: number };
  pgP99: number;
  pgConnects: number;
  redisP99: number;
}
const eldText = (name: string, s: Stats) =>
  `${name} event-loop delay p99 ${ms(s.eldP99)} (max ${ms(s.eldMax)}), GC ${s.gc.count}× ${ms(s.gc.ms)} (longest ${ms(s.gc.maxMs)})`;

async function main(): Promise<void> {
  const redisPort = await freePort();
  let redisProc = await privateRedis(redisPort);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  // BENCH_AMQP_URL: an existing vhost of the bench's (kept), when the shared broker is too slow to create one.
  const vhost = process.env.BENCH_AMQP_URL
    ? { url: process.env.BENCH_AMQP_URL, delete: async () => undefined }
    : await benchVhost();
  const db = await createTestDatabase('bench_feed');
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    REDIS_URL: redisUrl,
    FEED_REDIS_PREFIX: PREFIX,
    FEED_LARGE_AUTHOR_THRESHOLD: String(FOLLOWERS + 1),
    LOG_LEVEL: 'warn',
    PORT: '0',
  };
  const config = loadFeedConfig(env);
  const logger = pino({ level: 'error' });
  // This process publishes (as the upstream services would) and watches; it consumes nothing.
  const messaging = createMessaging({
    url: vhost.url,
    service: 'feed-bench',
    topology: COMMUNITY_TOPOLOGY,
    logger,
    registry: new Registry(),
    classifiers: [],
  });
  await messaging.start();
  const publisher = messaging.publisher;
  const pool = createPgPool(db.url, { max: 4, applicationName: 'feed-bench', logger });
  const replicas: Array<{ name: string; child: Child; address: string }> = [];
  for (const lanes of SPLIT ? ['activity', 'fanout'] : ['all']) {
    const child = forkChild('scripts/bench/feed-replica.ts', { ...env, FEED_LANES: lanes });
    const { address } = await child.ask<{ address: string }>({}, 'ready');
    replicas.push({ name: lanes, child, address });
  }
  const front = replicas[0]; // activity (or all): the HTTP reads go here
  const load = forkChild('scripts/bench/feed-load.ts', process.env);
  const redis = new Redis(redisUrl, { keyPrefix: PREFIX });
  const admin = new Redis(redisUrl);
  // Both see the private Redis killed for the fallback reads: reconnect attempts, not crashes.
  redis.on('error', () => undefined);
  admin.on('error', () => undefined);
  const ttl = config.FEED_ACTIVE_WINDOW_DAYS * DAY;
  const statsOf = (r: (typeof replicas)[number]) => r.child.ask<Stats>({ type: 'stats' }, 'stats');
  const resetAll = () => Promise.all(replicas.map((r) => r.child.ask({ type: 'reset' }, 'reset')));
  async function slowlog(what: string): Promise<void> {
    const entries = (await admin.call('SLOWLOG', 'GET', '-1')) as Array<[number, number, number, string[]]>;
    await admin.call('SLOWLOG', 'RESET');
    const byCommand = new Map<string, number[]>();
    for (const [, , micros, args] of entries) {
      const name =
        String(args[0]).toUpperCase() === 'EVALSHA'
          ? `EVALSHA(${Number(args[2])} keys)`
          : String(args[0]).toUpperCase();
      byCommand.set(name, [...(byCommand.get(name) ?? []), micros / 1000]);
    }
    const parts = [...byCommand].map(([c, xs]) => `${c} ×${xs.length} max ${ms(Math.max(...xs))}`);
    log(`redis SLOWLOG (> 1 ms) during ${what}: ${entries.length === 0 ? 'none' : parts.join(', ')}`);
  }
  log(
    `feed-service replicas: ${replicas.map((r) => `${r.name} (${r.address})`).join(', ')}; private redis :${redisPort}; chunk ${config.FEED_FANOUT_CHUNK_SIZE}, fan-out concurrency ${config.FEED_FANOUT_CONCURRENCY}, small-lane pre-emption ${config.FEED_FANOUT_YIELD_MAX_MS > 0 ? `on (≤ ${config.FEED_FANOUT_YIELD_MAX_MS} ms per chunk)` : 'off'}`,
  );

  try {
    // ---- seed ----------------------------------------------------------------------------
    const t0 = performance.now();
    const id = (p: string, i: number) => `${p}-${String(i).padStart(7, '0')}`;
    async function seed(author: string, p: string, n: number) {
      await pool.query(
        `INSERT INTO feed_follows SELECT $1 || '-' || lpad(i::text, 7, '0'), $2, true, now() - interval '1 day' FROM generate_series(1, $3::int) i`,
        [p, author, n],
      );
      await pool.query(
        `INSERT INTO feed_user_activity SELECT $1 || '-' || lpad(i::text, 7, '0'), now() FROM generate_series(1, $2::int) i ON CONFLICT DO NOTHING`,
        [p, n],
      );
      await pool.query(`INSERT INTO feed_authors (author_id, follower_count) VALUES ($1, $2)`, [author, n]);
      for (let i = 1; i <= n; i += 10_000) {
        const pipe = redis.pipeline();
        for (let j = i; j < Math.min(n + 1, i + 10_000); j++)
          pipe.set(`live:${id(p, j)}`, '1', 'PX', ttl).set(`ready:${id(p, j)}`, '1', 'PX', ttl);
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
      for (let j = i; j < Math.min(FOLLOWERS + 1, i + chunk); j++)
        pipe
          .zadd(`raw:${id('bf', j)}`, at, 'raw-post')
          .zremrangebyrank(`raw:${id('bf', j)}`, 0, -(config.FEED_CAP + 1));
      await pipe.exec();
    }
    const rawSeconds = (performance.now() - tb) / 1000;
    log(
      `raw baseline: ${FOLLOWERS.toLocaleString()} entries in ${rawSeconds.toFixed(2)} s = ${Math.round(FOLLOWERS / rawSeconds).toLocaleString()} entries/s`,
    );

    // ---- lanes, idle ----------------------------------------------------------------------
    const smallFollowers = Array.from({ length: 10 }, (_, i) => id('sf', i + 1));
    let seq = 0;
    async function smallPostLatency(): Promise<number> {
      const postId = `small-${++seq}`;
      const start = performance.now();
      await publisher.publish(
        buildEvent('post.published', { postId, authorId: 'small', title: 't', excerpt: 'e' }, { producer: 'bench' }),
      );
      for (;;) {
        const pipe = redis.pipeline();
        for (const u of smallFollowers) pipe.zscore(`f:${u}`, postId);
        const res = (await pipe.exec()) ?? [];
        if (res.every(([, v]) => v !== null)) return performance.now() - start;
        await sleep(1);
      }
    }
    const idle: number[] = [];
    await resetAll();
    for (let i = 0; i < LANE_SAMPLES + 1; i++) {
      const v = await smallPostLatency();
      if (i > 0) idle.push(v); // the first warms up
      await sleep(100);
    }
    log(`lanes, idle: 10-follower post publish → all entries p50 ${ms(pct(idle, 50))} (max ${ms(Math.max(...idle))})`);
    if (SPLIT) {
      const st = await statsOf(front);
      const n = LANE_SAMPLES + 1;
      log(
        `  per small post on the activity replica, idle: Postgres ${(st.pgCalls / n).toFixed(0)} calls ${ms(st.pgMs / n)}, Redis ${(st.redisCalls / n).toFixed(0)} calls ${ms(st.redisMs / n)}`,
      );
    }
    await admin.call('SLOWLOG', 'RESET');
    await resetAll();

    // ---- fan-out of the big post, with small posts during it --------------------------------
    const bigId = 'big-post';
    const cpuNamed = () => ({
      ...Object.fromEntries(replicas.map((r) => [`feed-service ${r.name}`, r.child.proc.pid])),
      redis: redisProc.pid,
      bench: process.pid,
    });
    const cpu0 = cpuSnapshot(cpuNamed());
    const tf = performance.now();
    await publisher.publish(
      buildEvent(
        'post.published',
        { postId: bigId, authorId: 'big', title: 'big', excerpt: 'to a million' },
        { producer: 'bench' },
      ),
    );
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
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM feed_fanout_chunks WHERE post_id = $1 AND done_at IS NOT NULL`,
        [bigId],
      );
      if (rows[0].n > 0 || done) break;
      await sleep(10);
    }
    // From here on the replicas' figures are the fan-out's chunks and the small posts only (planning
    // the big post on the activity replica, a 1M-row scan, is not counted in the small posts' waits).
    await resetAll();
    while (!done && busy.length < LANE_SAMPLES * 4) {
      busy.push(await smallPostLatency());
      await sleep(250);
    }
    await watcher;
    const cpu = cpuSeconds(cpu0, cpuSnapshot(cpuNamed()));
    // The service's work: everything but this process (its watchers and the small posts' polling).
    const coreSeconds = Object.entries(cpu).reduce((a, [k, v]) => (k === 'bench' ? a : a + v), 0);
    const { rows: fin } = await pool.query(
      `SELECT sum(written)::int AS written, count(*)::int AS chunks, sum(attempts)::int AS attempts FROM feed_fanout_chunks WHERE post_id = $1`,
      [bigId],
    );
    log(
      `fan-out: ${FOLLOWERS.toLocaleString()} followers in ${fanoutSeconds.toFixed(2)} s = ${Math.round(FOLLOWERS / fanoutSeconds).toLocaleString()} entries/s (written ${fin[0].written}, ${fin[0].chunks} chunks, ${fin[0].attempts} attempts)`,
    );
    log(`fan-out vs raw baseline: ${(rawSeconds / fanoutSeconds).toFixed(2)}× (target ≥ 0.5×)`);
    log(
      `  CPU during the fan-out: ${Object.entries(cpu)
        .map(([k, v]) => `${k} ${v.toFixed(1)} s`)
        .join(', ')}; ${coreSeconds.toFixed(1)} core-seconds without the bench's own ` +
        `(${(coreSeconds / fanoutSeconds).toFixed(2)} cores busy): ${Math.round(FOLLOWERS / coreSeconds).toLocaleString()} followers per second per core (the small posts' work included)`,
    );
    for (const r of replicas) {
      const st = await statsOf(r);
      const paused = Object.entries(st.yielded)
        .map(([k, v]) => `${k} ${v.toFixed(2)} s`)
        .join(', ');
      log(
        `  during the fan-out: ${eldText(r.name, st)}; waited on Postgres ${st.pgCalls} calls ${ms(st.pgMs)}, on Redis ${st.redisCalls} calls ${ms(st.redisMs)}${paused ? `; chunks paused for the small lane: ${paused}` : ''}`,
      );
    }
    if (SPLIT && busy.length > 0) {
      const st = await statsOf(front);
      log(
        `  per small post on the activity replica: Postgres ${(st.pgCalls / busy.length).toFixed(0)} calls ${ms(st.pgMs / busy.length)}, Redis ${(st.redisCalls / busy.length).toFixed(0)} calls ${ms(st.redisMs / busy.length)}, of ${ms(busy.reduce((a, b) => a + b, 0) / busy.length)} mean latency`,
      );
    }
    await slowlog('the fan-out');
    if (busy.length > 0) {
      log(
        `lanes, during the fan-out: p50 ${ms(pct(busy, 50))} (max ${ms(Math.max(...busy))}, ${busy.length} posts) vs idle p50 ${ms(pct(idle, 50))}: ${(pct(busy, 50) / pct(idle, 50)).toFixed(2)}× (target ≤ 2×)`,
      );
    } else
      log('lanes, during the fan-out: the fan-out ended before a small post could be measured (raise BENCH_FOLLOWERS)');

    // ---- reads ------------------------------------------------------------------------------
    // READERS users following 'small' (materialised), 50 posts of 'small' in each feed.
    await pool.query(
      `INSERT INTO feed_follows SELECT 'rd-' || lpad(i::text, 7, '0'), 'small', true, now() - interval '1 day' FROM generate_series(1, $1::int) i`,
      [READERS],
    );
    await pool.query(
      `INSERT INTO feed_user_activity SELECT 'rd-' || lpad(i::text, 7, '0'), now() FROM generate_series(1, $1::int) i`,
      [READERS],
    );
    const readers = Array.from({ length: READERS }, (_, i) => id('rd', i + 1));
    for (const u of readers) await redis.set(`live:${u}`, '1', 'PX', ttl);
    for (let i = 0; i < 50; i++) {
      await publisher.publish(
        buildEvent(
          'post.published',
          { postId: `rp-${i}`, authorId: 'small', title: `read ${i}`, excerpt: 'x'.repeat(120) },
          { producer: 'bench' },
        ),
      );
    }
    while (
      (
        await pool.query(
          `SELECT count(*)::int AS n FROM feed_fanout_jobs WHERE post_id LIKE 'rp-%' AND done_at IS NOT NULL`,
        )
      ).rows[0].n < 50
    )
      await sleep(50);
    for (const u of readers) await redis.set(`ready:${u}`, '1', 'PX', ttl);
    const { tokens } = await front.child.ask<{ tokens: string[] }>({ type: 'sign', users: readers }, 'tokens');

    async function atRate(what: string, kind: 'api' | 'raw'): Promise<number[]> {
      await resetAll();
      const res = await load.ask<{
        latencies: number[];
        errors: number;
        achieved: number;
        eldP99: number;
        eldMax: number;
      }>(
        {
          type: 'run',
          kind,
          rate: READ_RATE,
          seconds: READ_SECONDS,
          users: readers,
          tokens,
          address: front.address,
          redisUrl,
          prefix: PREFIX,
        },
        'done',
      );
      const lat = res.latencies;
      log(
        `${what}: ${READ_RATE * READ_SECONDS} at ${READ_RATE}/s (achieved ${res.achieved.toFixed(0)}/s, ${res.errors} errors): p50 ${ms(Math.max(0, pct(lat, 50)))}, p99 ${ms(pct(lat, 99))}, max ${ms(Math.max(...lat))}`,
      );
      const st = await statsOf(front);
      const server =
        kind === 'api'
          ? `, server-side p50 ${ms(st.serverP50)} p99 ${ms(st.serverP99)} (${st.requests} requests; waits p99: Postgres ${ms(st.pgP99)} of ${st.pgCalls} calls (${st.pgConnects} new connections), Redis ${ms(st.redisP99)} of ${st.redisCalls}); `
          : '; ';
      log(
        `  load process event-loop delay p99 ${ms(res.eldP99)} (max ${ms(res.eldMax)})${server}${eldText(front.name, st)}`,
      );
      return lat;
    }
    const reads = async () => (await statsOf(front)).reads;
    await atRate('warm-up (API)', 'api');
    await admin.call('SLOWLOG', 'RESET');
    const before = await reads();
    const rawLat = await atRate('raw ZRANGE REV + MGET', 'raw');
    const apiLat = await atRate('feed API (Redis up)', 'api');
    const after = await reads();
    await slowlog('the reads');
    const hits = (after.hit ?? 0) - (before.hit ?? 0);
    const all = Object.keys(after).reduce((n, k) => n + (after[k] ?? 0) - (before[k] ?? 0), 0);
    log(
      `hit ratio ${(hits / all).toFixed(3)}; API p99 vs raw p99: ${(pct(apiLat, 99) / pct(rawLat, 99)).toFixed(2)}× (target ≤ 3×)`,
    );

    redisProc.kill('SIGKILL');
    await once(redisProc, 'exit');
    await sleep(500); // the replicas' clients see the connection drop
    const fb0 = (await reads()).fallback ?? 0;
    await atRate('feed API (Redis down, Postgres fallback)', 'api');
    log(`fallback reads counted: ${((await reads()).fallback ?? 0) - fb0}`);
    redisProc = await privateRedis(redisPort);
  } finally {
    await Promise.all(replicas.map((r) => r.child.ask({ type: 'stop' }, 'never').catch(() => undefined)));
    load.proc.kill();
    await messaging.stop(1000);
    await pool.end();
    redis.disconnect();
    admin.disconnect();
    redisProc.kill('SIGKILL');
    await Promise.all([db.drop(), vhost.delete()]);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
