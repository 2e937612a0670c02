/**
 * npm run bench:peers — the same job on two stacks, in one run, on this machine: BullMQ + Redis (the
 * most common Node choice) and this project's notification-service on RabbitMQ + PostgreSQL.
 *
 * The job: for each incoming user.mentioned event, insert a notification row idempotently (unique
 * key, ON CONFLICT DO NOTHING) into PostgreSQL, update that user's unread counter, and emit a
 * follow-up message that a second consumer receives. Each stack is measured two ways:
 *
 * 1. Latency at a fixed offered rate (BENCH_RATE, default 1,000 events/s, for BENCH_LATENCY_SECONDS,
 *    default 10), paced like scripts/bench/notifications.ts (every 5 ms, to the schedule start + i/RATE):
 *    event enqueued/published → its follow-up received by the second consumer, in this process.
 *    Every event targets its own user. p50 and p99 over all events of the phase, after a warm-up of
 *    BENCH_WARMUP_SECONDS at the same rate (not measured) and a wait for a quiet machine.
 * 2. Throughput: BENCH_EVENTS (default 20,000) events to BENCH_USERS (10,000) users, produced as
 *    fast as the producer's acknowledgements allow, while consuming; events/s = N / (first enqueue →
 *    the N-th distinct follow-up received). Both latency phases run before both throughput phases:
 *    a burst leaves the broker and Postgres busy for a while (docs/BENCHMARKS.md).
 *
 * The stacks:
 * - BullMQ: a PRIVATE redis-server (never the shared one) on a free port, `--appendonly yes
 *   --appendfsync everysec --save ""` in a temporary folder, killed at the end. The producer (this
 *   process) enqueues with Queue.addBulk (one call per 5 ms tick in the latency phase, chunks of
 *   BENCH_BULLMQ_BULK in the throughput phase, at most BENCH_WINDOW jobs unacknowledged). A Worker of
 *   BENCH_BULLMQ_CONCURRENCY (32) runs in a child process of its own, as the service does (this file
 *   with the argument `bullmq-worker`, on @swc-node/register), with a pg Pool of 10 (the service's
 *   DATABASE_POOL_MAX default): per job, one transaction (INSERT … ON CONFLICT DO NOTHING, and the
 *   counter upsert when a row was inserted), then Queue.add of the follow-up to a second queue (jobId
 *   from the notification key, so a retried job's follow-up is deduplicated while it is queued). The
 *   transaction is, by default (BENCH_BULLMQ_SQL=statement), one statement with two data-modifying
 *   CTEs (atomic, one round trip: the strongest per-job form); BENCH_BULLMQ_SQL=transaction runs the
 *   everyday form, BEGIN / INSERT / counter / COMMIT on one pooled client (four round trips). A second Worker (same concurrency)
 *   in this process receives the follow-ups. removeOnComplete on every job, so Redis does not grow.
 *   Tables of its own in a fresh database (createTestDatabase, dropped at the end).
 * - notification-service: the real service as a child process, started the way
 *   scripts/bench/notifications.ts starts it (own vhost via createTestVhost, own migrated database
 *   via createTestDatabase, the esbuild bundle run by plain node unless BENCH_RUNNER=swc, LOG_LEVEL
 *   warn), fed user.mentioned events (the same builder) published with confirms to the events
 *   exchange; the follow-up is the service's notification.created, received by this process on a
 *   quorum queue of its own bound to the events exchange with routing key notification.created.
 *
 * Durability, as each stack is normally run: RabbitMQ quorum queues with publisher confirms (a
 * confirm follows the fsync of the Raft log), Postgres synchronous_commit on (both stacks, same
 * server). BullMQ acknowledges an add when Redis has applied it; appendfsync everysec writes the AOF
 * to disk once a second (it is written to the file before the reply, so a crash of the Redis process
 * loses nothing; an OS crash or power loss loses up to ~1-2 s of acknowledged jobs). So the BullMQ
 * stack does less durable work per event at the queue, and its p99 does not include an fsync there.
 *
 * Fairness caveats:
 * - BullMQ runs one Postgres transaction per job (BullMQ has no batch consumption; BullMQ Pro has);
 *   the service batches (CONSUMER_BATCH_SIZE events per transaction, up to CONSUMER_BATCH_WAIT_MS).
 *   That is how each is normally used, and much of the throughput gap.
 * - The BullMQ follow-up is added after the commit (no outbox): a worker that dies between the two
 *   leaves the job to be retried as stalled, and the retry re-emits. How the service emits
 *   notification.created is its own business (it may change); this bench relies only on it arriving
 *   on the events exchange. The service also does more per event than this job (thread slots, the
 *   inbox NOTIFY, quiet hours, metrics).
 * - The BullMQ worker process runs on @swc-node/register, the service as a bundle: same JS at run
 *   time, ~100 MB more RSS for swc, not measured here.
 * - Two cores shared by everything: broker or Redis, Postgres, the worker or service, and this
 *   producer/consumer process (each one's CPU in the phase is printed; BullMQ's second Worker in this
 *   process costs more CPU than an amqplib consumer). Other work on the machine shows as "anything
 *   else": a figure measured while it was large is not a figure of the stack; run it on a quiet
 *   machine, and more than once. At 1,000 events/s BullMQ's stack uses ~1.5 of the 2 cores here, so
 *   its p99 is very sensitive to any other load.
 * - BENCH_FIRST (bullmq | service, default bullmq) says which stack goes first in each pair of phases.
 *
 * Copied from scripts/bench/notifications.ts (it runs main() when imported, exports nothing):
 * PUBLISHER_USER, mentionBody, publishAll (options factored into publishOptions), publishPaced (as `paced`:
 * the same schedule, sending through a callback so both stacks use it),
 * percentiles, cpuSeconds, machineCpu, pidsOf, settle (capped), bundle and startService.
 *
 * Env: BENCH_EVENTS (20000), BENCH_RATE (1000), BENCH_LATENCY_SECONDS (10), BENCH_WARMUP_SECONDS (3),
 * BENCH_USERS (10000), BENCH_WINDOW (2000 unacknowledged), BENCH_BULLMQ_CONCURRENCY (32),
 * BENCH_BULLMQ_BULK (500 jobs per addBulk in the throughput phase), BENCH_SETTLE_MAX_SECONDS (30),
 * BENCH_BULLMQ_SQL (statement | transaction), BENCH_FIRST (bullmq), BENCH_ONLY (bullmq | service: one
 * stack alone, for tuning), BENCH_RUNNER (bundle | swc); the service's own tunables pass through.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { Queue, Worker, type Job } from 'bullmq';
import Redis from 'ioredis';
import pg from 'pg';
import { createTestDatabase, createTestVhost, freePort } from '@community/testing';
import {
  cpuSeconds,
  machineCpu,
  mentionBody,
  percentiles,
  pidsOf,
  publishAll,
  publishOptions,
  ROOT,
  startNotificationServiceProcess,
} from './support';

const N = Number(process.env.BENCH_EVENTS ?? 20_000);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const USERS = Number(process.env.BENCH_USERS ?? 10_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_BULLMQ_CONCURRENCY ?? 32);
const BULK = Number(process.env.BENCH_BULLMQ_BULK ?? 500);
const SQL_MODE = process.env.BENCH_BULLMQ_SQL === 'transaction' ? 'transaction' : 'statement';
/** BENCH_ONLY=bullmq | service: one stack alone (for tuning it; the comparison is the default run). */
const ONLY =
  process.env.BENCH_ONLY === 'bullmq' || process.env.BENCH_ONLY === 'service' ? process.env.BENCH_ONLY : undefined;
const SETTLE_MAX_SECONDS = Number(process.env.BENCH_SETTLE_MAX_SECONDS ?? 30);
const FIRST = process.env.BENCH_FIRST === 'service' ? 'service' : 'bullmq';
const RUNNER = process.env.BENCH_RUNNER === 'swc' ? 'swc' : 'bundle';
const BULLMQ_PG_POOL = 10;
const QUIET_PERCENT = 15;
/** "anything else" (% of one core) over which a phase's figures are flagged as disturbed. */
const OTHER_WARN = 20;
const EVENTS_QUEUE = 'peers-events';
const FOLLOWUP_QUEUE = 'peers-followups';
const SERVICE_FOLLOWUP_QUEUE = 'bench.peers.created';

type MentionEvent = {
  id: string;
  type: 'user.mentioned';
  data: { commentId: string; postId: string; actorId: string; mentionedUserId: string; excerpt: string };
};

/** The follow-up the BullMQ worker emits: the fields of notification.created this job has. */
type FollowUp = {
  notificationId: string;
  userId: string;
  type: 'mention';
  idempotencyKey: string;
  actorId: string;
  resourceType: 'comment';
  resourceId: string;
  excerpt: string;
};

// ---- pacing and settling (scripts/bench/support.ts has the rest these benchmarks share) ----

/**
 * Calls `send(from, to)` every 5 ms for the items due by the schedule start + i/RATE (a slow tick
 * is caught up, not dropped), recording each item's send time. Returns the rate offered.
 */
async function paced(total: number, sentAt: Float64Array, send: (from: number, to: number) => void): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE));
      if (due > next) {
        const now = performance.now();
        for (let i = next; i < due; i++) sentAt[i] = now;
        send(next, due);
        next = due;
      }
      if (next >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  return total / ((performance.now() - t0) / 1000);
}

/** Waits until the machine is under QUIET_PERCENT busy over a second (at most SETTLE_MAX_SECONDS). */
async function settle(): Promise<{ seconds: number; quiet: boolean }> {
  const t0 = performance.now();
  for (;;) {
    const m0 = machineCpu();
    await new Promise((r) => setTimeout(r, 1000));
    const m1 = machineCpu();
    const busy = ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100;
    const seconds = (performance.now() - t0) / 1000;
    if (busy < QUIET_PERCENT || seconds > SETTLE_MAX_SECONDS) return { seconds, quiet: busy < QUIET_PERCENT };
  }
}

// ---- follow-ups: what the second consumer of either stack received ----------------------------

/**
 * One measured phase. Events are told apart by their commentId, `c-<tag>-<i>`, which both stacks'
 * follow-ups carry as resourceId; the first arrival of each counts (duplicates are counted apart).
 */
class Phase {
  readonly seenAt: Float64Array;
  seen = 0;
  duplicates = 0;
  private readonly prefix: string;
  private wake?: () => void;
  constructor(
    readonly tag: string,
    readonly total: number,
  ) {
    this.prefix = `c-${tag}-`;
    this.seenAt = new Float64Array(total);
  }
  received(resourceId: unknown, at: number): void {
    if (typeof resourceId !== 'string' || !resourceId.startsWith(this.prefix)) return;
    const i = Number(resourceId.slice(this.prefix.length));
    if (!(i >= 0 && i < this.total)) return;
    if (this.seenAt[i] !== 0) {
      this.duplicates++;
      return;
    }
    this.seenAt[i] = at;
    if (++this.seen === this.total) this.wake?.();
  }
  async complete(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.seen < this.total) {
      if (Date.now() > deadline)
        throw new Error(`${this.tag}: only ${this.seen} of ${this.total} follow-ups within ${timeoutMs / 1000} s`);
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, 200);
      });
    }
    return this.seenAt.reduce((a, b) => Math.max(a, b), 0);
  }
}

let phase: Phase | undefined;
const followUpReceived = (resourceId: unknown) => phase?.received(resourceId, performance.now());

interface Stack {
  name: string;
  durability: string;
  /** The same, in a table cell. */
  durabilityShort: string;
  /** Whether it uses the shared RabbitMQ (whose CPU then counts). */
  broker: boolean;
  /** Pids whose CPU is this stack's: [label, pid]. */
  pids(): Array<[string, number]>;
  /** Its database: URL and name (the Postgres backends whose CPU is this stack's). */
  db: { url: string; name: string };
  /** Offered load at RATE for `seconds`; resolves with the rate offered once every follow-up arrived. */
  latency(tag: string, seconds: number): Promise<{ offered: number; phase: Phase; sentAt: Float64Array }>;
  /** N events as fast as acknowledgements allow; resolves with events/s end to end. */
  throughput(tag: string): Promise<{ rate: number; phase: Phase; check: string }>;
  stop(): Promise<void>;
}

// ---- stack 1: BullMQ + a private Redis ---------------------------------------------------------

async function startRedis(): Promise<{ port: number; proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-peers-redis-'));
  const port = await freePort();
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--dir',
      dir,
      '--save',
      '',
      '--logfile',
      path.join(dir, 'redis.log'),
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) break;
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') {
        probe.disconnect();
        return { port, proc, dir };
      }
    } catch {
      // not up yet
    }
    probe.disconnect();
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`private redis-server did not start (see ${path.join(dir, 'redis.log')})`);
}

const BULLMQ_SCHEMA = `
  CREATE TABLE peer_notifications (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    idempotency_key text NOT NULL UNIQUE,
    user_id text NOT NULL,
    type text NOT NULL,
    actor_id text,
    resource_type text NOT NULL,
    resource_id text NOT NULL,
    excerpt text,
    source_event_id text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX peer_notifications_inbox ON peer_notifications (user_id, created_at DESC);
  CREATE TABLE peer_unread_counters (user_id text PRIMARY KEY, unread_count integer NOT NULL);`;

async function startBullmq(): Promise<Stack> {
  // What was started so far, undone in reverse order by stop() or by a failed start.
  const undo: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const step of undo.reverse()) await step().catch((err) => console.error('bullmq cleanup:', err));
  };
  try {
    const [redisResult, dbResult] = await Promise.allSettled([startRedis(), createTestDatabase('bench_peers_bullmq')]);
    if (redisResult.status === 'fulfilled') {
      const { proc, dir } = redisResult.value;
      undo.push(async () => {
        if (proc.exitCode === null) {
          proc.kill('SIGTERM');
          await new Promise((r) => proc.once('exit', r));
        }
        rmSync(dir, { recursive: true, force: true });
      });
    }
    if (dbResult.status === 'fulfilled') undo.push(() => dbResult.value.drop());
    if (redisResult.status === 'rejected') throw redisResult.reason;
    if (dbResult.status === 'rejected') throw dbResult.reason;
    const [redis, db] = [redisResult.value, dbResult.value];
    const admin = new pg.Pool({ connectionString: db.url, max: 1 });
    undo.push(() => admin.end());
    await admin.query(BULLMQ_SCHEMA);
    const connection = { host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null };
    const events = new Queue<MentionEvent>(EVENTS_QUEUE, {
      connection,
      defaultJobOptions: {
        removeOnComplete: true,
        removeOnFail: { count: 1000 },
        attempts: 5,
        backoff: { type: 'exponential', delay: 1000 },
      },
    });
    undo.push(() => events.close());
    const followups = new Worker<FollowUp>(
      FOLLOWUP_QUEUE,
      async (job: Job<FollowUp>) => followUpReceived(job.data.resourceId),
      { connection, concurrency: CONCURRENCY, removeOnComplete: { count: 0 }, removeOnFail: { count: 1000 } },
    );
    undo.push(() => followups.close());
    followups.on('error', (err) => console.error('bullmq follow-up worker:', err));
    await Promise.all([events.waitUntilReady(), followups.waitUntilReady()]);

    const worker = spawn(process.execPath, ['-r', '@swc-node/register', __filename, 'bullmq-worker'], {
      cwd: ROOT,
      env: { ...process.env, PEERS_REDIS_PORT: String(redis.port), PEERS_DATABASE_URL: db.url },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    undo.push(async () => {
      if (worker.exitCode === null && worker.signalCode === null) {
        worker.kill('SIGTERM');
        await new Promise((r) => worker.once('exit', r));
      }
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('bullmq worker not ready within 60 s')), 60_000);
      worker.once('message', () => (clearTimeout(timer), resolve()));
      worker.once('exit', (code) => (clearTimeout(timer), reject(new Error(`bullmq worker exited with ${code}`))));
    });
    return bullmqStack({ redis, db, admin, events, worker });
  } catch (err) {
    await stop();
    throw err;
  }

  function bullmqStack({
    redis,
    db,
    admin,
    events,
    worker,
  }: {
    redis: { proc: ChildProcess };
    db: { url: string; name: string };
    admin: pg.Pool;
    events: Queue<MentionEvent>;
    worker: ChildProcess;
  }): Stack {
    const jobsOf = (tag: string, from: number, to: number, user: (i: number) => string) =>
      Array.from({ length: to - from }, (_, k) => {
        const data = JSON.parse(mentionBody(from + k, user(from + k), tag).toString()) as MentionEvent;
        return { name: 'user.mentioned', data, opts: { jobId: data.id } };
      });

    return {
      name: 'BullMQ + Redis',
      durability: 'Redis AOF appendfsync everysec (add acked before fsync); Postgres synchronous_commit on',
      durabilityShort: 'Redis AOF everysec',
      broker: false,
      db,
      pids: () => [
        ['worker', worker.pid ?? 0],
        ['redis', redis.proc.pid ?? 0],
      ],
      async latency(tag, seconds) {
        const total = RATE * seconds;
        const p = (phase = new Phase(tag, total));
        const sentAt = new Float64Array(total);
        // Jobs built before the clock starts, as the AMQP bodies are.
        const jobs = jobsOf(tag, 0, total, (i) => `${tag}-${i}`);
        const adds: Promise<unknown>[] = [];
        let failed: unknown;
        const offered = await paced(total, sentAt, (from, to) => {
          adds.push(events.addBulk(jobs.slice(from, to)).catch((err: unknown) => (failed ??= err)));
        });
        await Promise.all(adds);
        if (failed) throw failed;
        await p.complete(30_000);
        return { offered, phase: p, sentAt };
      },
      async throughput(tag) {
        const p = (phase = new Phase(tag, N));
        const jobs = jobsOf(tag, 0, N, (i) => `${tag}-u${i % USERS}`);
        const before = await admin.query<{ rows: string; unread: string }>(
          'SELECT (SELECT count(*) FROM peer_notifications) AS rows, (SELECT coalesce(sum(unread_count), 0) FROM peer_unread_counters) AS unread',
        );
        const t0 = performance.now();
        const inFlight = new Set<Promise<unknown>>();
        for (let from = 0; from < N; from += BULK) {
          while (inFlight.size * BULK >= WINDOW) await Promise.race(inFlight);
          const add: Promise<unknown> = events
            .addBulk(jobs.slice(from, from + BULK))
            .finally(() => inFlight.delete(add));
          inFlight.add(add);
        }
        await Promise.all(inFlight);
        const tLast = await p.complete(300_000);
        const after = await admin.query<{ rows: string; unread: string }>(
          'SELECT (SELECT count(*) FROM peer_notifications) AS rows, (SELECT coalesce(sum(unread_count), 0) FROM peer_unread_counters) AS unread',
        );
        const rows = Number(after.rows[0].rows) - Number(before.rows[0].rows);
        const unread = Number(after.rows[0].unread) - Number(before.rows[0].unread);
        if (rows !== N || unread !== N)
          throw new Error(`BullMQ invariant broken: ${N} events, ${rows} rows, +${unread} unread`);
        return { rate: N / ((tLast - t0) / 1000), phase: p, check: `${rows} rows, unread +${unread}` };
      },
      stop,
    };
  }
}

const INSERT_NOTIFICATION = `INSERT INTO peer_notifications
    (idempotency_key, user_id, type, actor_id, resource_type, resource_id, excerpt, source_event_id)
  VALUES ($1, $2, 'mention', $3, 'comment', $4, $5, $6)
  ON CONFLICT (idempotency_key) DO NOTHING RETURNING id, user_id`;
const BUMP_COUNTER = `ON CONFLICT (user_id) DO UPDATE SET unread_count = peer_unread_counters.unread_count + 1`;

/** BENCH_BULLMQ_SQL=statement: row and counter in one statement (its own transaction), one round trip. */
async function oneStatement(pool: pg.Pool, params: string[]): Promise<string | undefined> {
  const r = await pool.query<{ id: string }>(
    `WITH ins AS (${INSERT_NOTIFICATION}),
     bump AS (INSERT INTO peer_unread_counters (user_id, unread_count) SELECT user_id, 1 FROM ins ${BUMP_COUNTER})
     SELECT id FROM ins`,
    params,
  );
  return r.rows[0]?.id;
}

/** BENCH_BULLMQ_SQL=transaction: BEGIN, the insert, the counter if inserted, COMMIT (four round trips). */
async function transaction(pool: pg.Pool, params: string[]): Promise<string | undefined> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const id = (await client.query<{ id: string }>(INSERT_NOTIFICATION, params)).rows[0]?.id;
    if (id)
      await client.query(`INSERT INTO peer_unread_counters (user_id, unread_count) VALUES ($1, 1) ${BUMP_COUNTER}`, [
        params[1],
      ]);
    await client.query('COMMIT');
    return id;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The BullMQ worker process: one transaction per job, then the follow-up to the second queue. */
async function bullmqWorkerMain(): Promise<void> {
  const connection = { host: '127.0.0.1', port: Number(process.env.PEERS_REDIS_PORT), maxRetriesPerRequest: null };
  const pool = new pg.Pool({ connectionString: process.env.PEERS_DATABASE_URL, max: BULLMQ_PG_POOL });
  const followups = new Queue<FollowUp>(FOLLOWUP_QUEUE, {
    connection,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: { count: 1000 }, attempts: 5 },
  });
  const worker = new Worker<MentionEvent>(
    EVENTS_QUEUE,
    async (job: Job<MentionEvent>) => {
      const e = job.data;
      const d = e.data;
      if (d.mentionedUserId === d.actorId) return;
      const key = `mention:${d.commentId}:${d.mentionedUserId}`;
      const params = [key, d.mentionedUserId, d.actorId, d.commentId, d.excerpt, e.id];
      let notificationId =
        SQL_MODE === 'statement' ? await oneStatement(pool, params) : await transaction(pool, params);
      // A duplicate event emits nothing; a retry of this job (its earlier attempt may have
      // committed, then failed before the add) emits again, deduplicated by the jobId.
      if (!notificationId && job.attemptsStarted <= 1) return;
      if (!notificationId)
        notificationId = (
          await pool.query<{ id: string }>('SELECT id FROM peer_notifications WHERE idempotency_key = $1', [key])
        ).rows[0].id;
      await followups.add(
        'notification.created',
        {
          notificationId,
          userId: d.mentionedUserId,
          type: 'mention',
          idempotencyKey: key,
          actorId: d.actorId,
          resourceType: 'comment',
          resourceId: d.commentId,
          excerpt: d.excerpt,
        },
        { jobId: `created-${key.replaceAll(':', '|')}` }, // a custom id cannot contain ':'
      );
    },
    { connection, concurrency: CONCURRENCY, removeOnComplete: { count: 0 }, removeOnFail: { count: 1000 } },
  );
  worker.on('failed', (job, err) => console.error(`bullmq worker: job ${job?.id} failed: ${err.message}`));
  worker.on('error', (err) => console.error('bullmq worker:', err));
  await Promise.all([worker.waitUntilReady(), followups.waitUntilReady()]);
  process.send?.('ready');
  await new Promise<void>((r) => process.once('SIGTERM', () => r()));
  await worker.close();
  await followups.close();
  await pool.end();
}

// ---- stack 2: the notification-service on RabbitMQ + PostgreSQL ------------------------------

/**
 * createTestVhost, tried three times: its management calls give up after 10 s, which a shared broker
 * busy with others' suites sometimes needs. (A given-up PUT may still create the vhost later; its
 * name carries this process's pid, so npm test's leftover sweep removes it once this process is gone.)
 */
async function vhostWithRetries(): Promise<Awaited<ReturnType<typeof createTestVhost>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await createTestVhost('bench-peers');
    } catch (err) {
      if (attempt === 3) throw err;
      console.error(`createTestVhost failed (${(err as Error).message}), trying again ...`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

async function startNotificationService(): Promise<Stack> {
  const [vhostResult, dbResult] = await Promise.allSettled([vhostWithRetries(), createTestDatabase('bench_peers_ns')]);
  if (vhostResult.status === 'rejected' || dbResult.status === 'rejected') {
    if (vhostResult.status === 'fulfilled') await vhostResult.value.delete().catch(() => undefined);
    if (dbResult.status === 'fulfilled') await dbResult.value.drop().catch(() => undefined);
    throw vhostResult.status === 'rejected' ? vhostResult.reason : (dbResult as PromiseRejectedResult).reason;
  }
  const [vhost, db] = [vhostResult.value, dbResult.value];
  let child: ChildProcess | undefined;
  let conn: amqplib.ChannelModel | undefined;
  try {
    const port = await freePort();
    child = await startNotificationServiceProcess(
      { AMQP_URL: vhost.url, DATABASE_URL: db.url, PORT: String(port) },
      RUNNER,
    );
    conn = await amqplib.connect(vhost.url);
    const cch = await conn.createChannel();
    await cch.checkExchange('community.events'); // declared by the service at start
    await cch.assertQueue(SERVICE_FOLLOWUP_QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    await cch.bindQueue(SERVICE_FOLLOWUP_QUEUE, 'community.events', 'notification.created');
    await cch.prefetch(100);
    await cch.consume(SERVICE_FOLLOWUP_QUEUE, (msg) => {
      if (!msg) return;
      const created = JSON.parse(msg.content.toString()) as { data?: { resourceId?: unknown } };
      followUpReceived(created.data?.resourceId);
      cch.ack(msg);
    });
  } catch (err) {
    if (child && child.exitCode === null) child.kill('SIGTERM');
    await conn?.close().catch(() => undefined);
    await Promise.all([db.drop(), vhost.delete()]);
    throw err;
  }
  const svc = child;
  const consumer = conn;
  const publisher = await amqplib.connect(vhost.url);
  const pch = await publisher.createConfirmChannel();
  return {
    name: `notification-service (${RUNNER})`,
    durability: 'RabbitMQ quorum queues + publisher confirms (after fsync); Postgres synchronous_commit on',
    durabilityShort: 'quorum queues + confirms',
    broker: true,
    pids: () => [['service', svc.pid ?? 0]],
    db,
    async latency(tag, seconds) {
      const total = RATE * seconds;
      const p = (phase = new Phase(tag, total));
      const sentAt = new Float64Array(total);
      const bodies = Array.from({ length: total }, (_, i) => mentionBody(i, `${tag}-${i}`, tag));
      const offered = await paced(total, sentAt, (from, to) => {
        for (let i = from; i < to; i++)
          pch.publish('community.events', 'user.mentioned', bodies[i], publishOptions('user.mentioned', i));
      });
      await pch.waitForConfirms();
      await p.complete(30_000);
      return { offered, phase: p, sentAt };
    },
    async throughput(tag) {
      const p = (phase = new Phase(tag, N));
      const bodies = Array.from({ length: N }, (_, i) => mentionBody(i, `${tag}-u${i % USERS}`, tag));
      const t0 = performance.now();
      await publishAll(pch, 'community.events', 'user.mentioned', bodies, WINDOW);
      const tLast = await p.complete(300_000);
      return { rate: N / ((tLast - t0) / 1000), phase: p, check: `${p.seen} distinct notification.created` };
    },
    async stop() {
      await publisher.close().catch(() => undefined);
      await consumer.close().catch(() => undefined);
      if (svc.exitCode === null) {
        svc.kill('SIGTERM');
        await new Promise((r) => svc.once('exit', r));
      }
      await Promise.all([db.drop(), vhost.delete()]);
    },
  };
}

// ---- the run -------------------------------------------------------------------------------

/**
 * The Postgres processes that work for a stack: its database's backends (autovacuum included) and
 * the server's WAL writer, checkpointer and background writer (shared with whatever else writes;
 * other databases' backends count as "anything else").
 */
async function postgresPids(db: { url: string; name: string }): Promise<number[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const r = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()
         AND (datname = $1 OR backend_type IN ('walwriter', 'checkpointer', 'background writer'))`,
      [db.name],
    );
    return r.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** Runs `fn` and says where the CPU went meanwhile (percent of one core), and how busy the machine was. */
async function measured<T>(stack: Stack, fn: () => Promise<T>): Promise<{ result: T; usage: string; other: number }> {
  // Per pid, so that a process starting or ending meanwhile (another database's backend) is counted
  // for what it used in the phase, never as a negative delta.
  const snapshot = async (): Promise<Map<string, Map<number, number>>> => {
    const groups: Array<[string, number[]]> = [
      ...stack.pids().map(([label, pid]): [string, number[]] => [label, [pid]]),
      ...(stack.broker ? [['rabbitmq', pidsOf('beam.smp')] as [string, number[]]] : []),
      ['postgres', await postgresPids(stack.db)],
      ['bench', [process.pid]],
    ];
    return new Map(groups.map(([label, pids]) => [label, new Map(pids.map((pid) => [pid, cpuSeconds(pid)]))]));
  };
  const [c0, m0, t0] = [await snapshot(), machineCpu(), performance.now()];
  const result = await fn();
  const [c1, m1, seconds] = [await snapshot(), machineCpu(), (performance.now() - t0) / 1000];
  const used = [...c1].map(([label, pids]): [string, number] => {
    let cpu = 0;
    for (const [pid, s1] of pids) cpu += s1 - (c0.get(label)?.get(pid) ?? 0);
    return [label, (cpu / seconds) * 100];
  });
  // The machine's busy time in % of one core; what the listed processes did not use is other work.
  const machine = ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100 * os.cpus().length;
  const other = Math.max(0, machine - used.reduce((a, [, v]) => a + v, 0));
  const parts = used.map(([label, v]) => `${label} ${v.toFixed(0)}%`);
  return {
    result,
    other,
    usage: `CPU (% of one core): ${parts.join(', ')}, anything else ${other.toFixed(0)}%; machine ${machine.toFixed(0)}% of ${os.cpus().length * 100}%`,
  };
}

type Row = {
  stack: Stack;
  lat?: {
    offered: number;
    p50: number;
    p99: number;
    max: number;
    settled: string;
    usage: string;
    other: number;
    dup: number;
  };
  tp?: { rate: number; check: string; usage: string; other: number; dup: number };
};

/** The mark of a figure measured while other work used more than OTHER_WARN of a core. */
const flag = (other: number) => (other > OTHER_WARN ? '!' : ' ');

const settledNote = (s: { seconds: number; quiet: boolean }) =>
  s.quiet ? `quiet after ${s.seconds.toFixed(0)} s` : `NOT quiet after ${s.seconds.toFixed(0)} s`;

async function main(): Promise<void> {
  const stacks: Stack[] = [];
  try {
    console.log(`starting: ${ONLY ?? 'private redis-server + BullMQ worker process; notification-service child'} ...`);
    const started = await Promise.allSettled([
      ...(ONLY !== 'service' ? [startBullmq()] : []),
      ...(ONLY !== 'bullmq' ? [startNotificationService()] : []),
    ]);
    for (const s of started) if (s.status === 'fulfilled') stacks.push(s.value);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    if (FIRST === 'service') stacks.reverse();
    const rows: Row[] = stacks.map((stack) => ({ stack }));

    for (const row of rows) {
      const { stack } = row;
      console.log(`${stack.name}: warm-up ${RATE} events/s for ${WARMUP_SECONDS} s (not measured) ...`);
      await stack.latency(`warm-${rows.indexOf(row)}`, WARMUP_SECONDS);
      const settled = settledNote(await settle());
      console.log(`${stack.name}: latency, ${RATE} events/s offered for ${LATENCY_SECONDS} s ...`);
      const { result, usage, other } = await measured(stack, () =>
        stack.latency(`lat-${rows.indexOf(row)}`, LATENCY_SECONDS),
      );
      const dup = result.phase.duplicates;
      row.lat = {
        offered: result.offered,
        ...percentiles(result.sentAt, result.phase.seenAt),
        settled,
        usage,
        other,
        dup,
      };
    }
    for (const row of rows) {
      const { stack } = row;
      const settled = settledNote(await settle());
      console.log(`${stack.name}: throughput, ${N} events to ${USERS} users (${settled}) ...`);
      const { result, usage, other } = await measured(stack, () => stack.throughput(`tp-${rows.indexOf(row)}`));
      row.tp = { rate: result.rate, check: result.check, usage, other, dup: result.phase.duplicates };
    }

    const w = Math.max(...rows.map((r) => r.stack.name.length));
    console.log(
      `\nResults (one run; 2 cores shared by broker/Redis, Postgres, worker/service and this script; ${FIRST} first)`,
    );
    const cells = (xs: Array<[string, number]>) => xs.map(([x, width]) => x.padStart(width)).join('  ');
    console.log(
      `  ${'stack'.padEnd(w)}  ${cells([
        ['events/s', 9],
        ['p50 ms', 8],
        ['p99 ms', 8],
        ['max ms', 8],
        ['offered', 7],
        ['other lat/tp', 12],
      ])}  durability`,
    );
    for (const { stack, lat, tp } of rows) {
      if (!lat || !tp) continue;
      const [l, t] = [flag(lat.other), flag(tp.other)];
      console.log(
        `  ${stack.name.padEnd(w)}  ${cells([
          [`${tp.rate.toFixed(0)}${t}`, 9],
          [`${lat.p50.toFixed(1)}${l}`, 8],
          [`${lat.p99.toFixed(1)}${l}`, 8],
          [`${lat.max.toFixed(1)}${l}`, 8],
          [`${lat.offered.toFixed(0)}/s`, 7],
          [`${lat.other.toFixed(0)}%/${tp.other.toFixed(0)}%`, 12],
        ])}  ${stack.durabilityShort}`,
      );
    }
    console.log(
      `\n  other lat/tp: CPU of anything else on the machine (% of one core) in the latency / throughput phase;` +
        ` over ${OTHER_WARN}% the phase's figures are marked ! (not the stack's alone: run again)`,
    );
    console.log(
      `  events/s: ${N} events end to end (all follow-ups received); p50/p99/max: ${RATE * LATENCY_SECONDS} events at the offered rate, enqueue/publish -> follow-up received`,
    );
    for (const { stack, lat, tp } of rows) {
      if (!lat || !tp) continue;
      console.log(`  ${stack.name}`);
      console.log(`    durability: ${stack.durability}`);
      console.log(
        `    latency phase (${lat.settled}): ${lat.usage}${lat.dup ? `; ${lat.dup} duplicate follow-ups` : ''}`,
      );
      console.log(`    throughput phase (${tp.check}): ${tp.usage}${tp.dup ? `; ${tp.dup} duplicate follow-ups` : ''}`);
    }
    console.log(
      `\n  BullMQ: worker concurrency ${CONCURRENCY}, pg pool ${BULLMQ_PG_POOL}, one transaction per job (${SQL_MODE}), addBulk of ${BULK}; service: its defaults (batched transactions)`,
    );
  } finally {
    phase = undefined;
    for (const s of stacks) await s.stop().catch((err) => console.error('cleanup:', err));
  }
}

const entry = process.argv[2] === 'bullmq-worker' ? bullmqWorkerMain : main;
entry().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
