// Scheduled jobs under single leadership (createScheduler) against a private migrated database:
// two schedulers stand for two replicas, each with its own pool.
import type { Pool } from 'pg';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { createTestDatabase, eventually, testLogger, type TestDatabase } from '@community/testing';
import {
  createPgPool,
  createScheduler,
  lastJobRuns,
  lastSucceededRun,
  LeadershipLostError,
  type JobContext,
  type ScheduledJob,
  type Scheduler,
} from '../src/index';

let db: TestDatabase;
let admin: Pool;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(async () => {
  db = await createTestDatabase('db_scheduler');
  admin = createPgPool(db.url, { max: 2 });
});

afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()?.();
});

afterAll(async () => {
  await admin.end();
  await db.drop();
});

interface Replica {
  scheduler: Scheduler;
  pool: Pool;
  registry: Registry;
}

/** One "replica": its own pool, registry and holder name; stopped and closed after the test. */
function replica(
  holder: string,
  jobs: ScheduledJob[],
  extra: { stopTimeoutMs?: number; url?: string; logger?: Logger } = {},
): Replica {
  const pool = createPgPool(extra.url ?? db.url, { max: 3, applicationName: `scheduler-test-${holder}` });
  const registry = new Registry();
  const scheduler = createScheduler({
    pool,
    logger: extra.logger ?? testLogger(holder),
    registry,
    jobs,
    holder,
    stopTimeoutMs: extra.stopTimeoutMs,
  });
  cleanup.push(async () => {
    await scheduler.stop();
    await pool.end();
  });
  return { scheduler, pool, registry };
}

interface RunRow {
  job: string;
  holder: string;
  outcome: string;
  started_at: Date;
  counts: Record<string, number>;
  error: string | null;
  duration_ms: number | null;
}
const runs = async (job: string) =>
  (
    await admin.query<RunRow>(
      'SELECT job, holder, outcome, started_at, counts, error, duration_ms FROM scheduled_job_runs WHERE job = $1 ORDER BY id',
      [job],
    )
  ).rows;

async function metric(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const m = registry.getSingleMetric(name);
  const values = ((await m?.get())?.values ?? []) as Array<{ labels: Record<string, unknown>; value: number }>;
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((sum, v) => sum + v.value, 0);
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A logger that keeps what the scheduler logs at warn and above, parsed. */
function recordingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/** Resolves when `signal` aborts, then throws its reason, as a job checking its signal does. */
const untilAborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

it('two replicas run a job once per interval window, never at the same time', async () => {
  const intervalMs = 400;
  let running = 0;
  let overlapped = false;
  const job = (holder: string): ScheduledJob => ({
    name: 'leadership',
    intervalMs,
    run: async () => {
      running += 1;
      if (running > 1) overlapped = true;
      await new Promise((r) => setTimeout(r, 60)); // the job's work, long enough for the other replica to try meanwhile
      running -= 1;
      return { ran: 1, [holder]: 1 };
    },
  });
  const a = replica('a', [job('a')]);
  const b = replica('b', [job('b')]);
  // b starts once a's first run has ended, so it wakes within a's window with the lock free: only
  // the recorded start keeps b from running right then, between a's runs.
  a.scheduler.start();
  await eventually(
    "a's first run ended",
    async () => (await runs('leadership'))[0]?.outcome === 'succeeded',
    30_000,
    5,
  );
  b.scheduler.start();
  const skipsOf = async (r: Replica) => metric(r.registry, 'scheduled_job_skips_total', { job: 'leadership' });
  await eventually(
    'five runs, and b refused at least once',
    async () => (await runs('leadership')).length >= 5 && (await skipsOf(b)) >= 1,
    30_000,
    20,
  );
  await a.scheduler.stop();
  await b.scheduler.stop();

  const rows = await runs('leadership');
  expect(overlapped).toBe(false);
  expect(rows.every((r) => r.outcome === 'succeeded' && r.counts.ran === 1)).toBe(true);
  // Once per window, as the due check records it: every start is at least a whole interval after
  // the previous one, on the database clock that stamped both (microseconds, no slack), however
  // slowly the replicas woke.
  const gaps = await admin.query<{ gap_ms: number }>(
    `SELECT (EXTRACT(EPOCH FROM started_at - lag(started_at) OVER (ORDER BY started_at)) * 1000)::float8 AS gap_ms
       FROM scheduled_job_runs WHERE job = 'leadership' ORDER BY started_at OFFSET 1`,
  );
  expect(gaps.rows).toHaveLength(rows.length - 1);
  for (const { gap_ms } of gaps.rows) expect(gap_ms).toBeGreaterThanOrEqual(intervalMs);
  expect((await skipsOf(a)) + (await skipsOf(b))).toBeGreaterThan(0);
});

it('a replica skips while another holds the lock, then finds the job not due until the window ends', async () => {
  const release = deferred();
  const started = deferred();
  const slow: ScheduledJob = {
    name: 'exclusive',
    intervalMs: 60_000,
    run: async () => {
      started.resolve();
      await release.promise;
      return { deleted: 3 };
    },
  };
  const a = replica('a', [slow]);
  const b = replica('b', [slow]);
  const first = a.scheduler.runOnce('exclusive');
  await started.promise;
  expect(await b.scheduler.runOnce('exclusive')).toMatchObject({ status: 'skipped', reason: 'locked' });
  const beforeEnd = Date.now() / 1000;
  release.resolve();
  expect(await first).toMatchObject({ status: 'ran', outcome: 'succeeded', counts: { deleted: 3 } });
  const afterEnd = Date.now() / 1000;

  // The wait b computed is the recorded start plus the interval minus the database's now() at its
  // check; bracket that now() by the database clock read just before and just after the attempt.
  const untilDue = `SELECT (EXTRACT(EPOCH FROM started_at + interval '60 seconds' - clock_timestamp()) * 1000)::float8 AS ms FROM scheduled_job_runs WHERE job = 'exclusive'`;
  const atMost = (await admin.query<{ ms: number }>(untilDue)).rows[0].ms;
  const again = await b.scheduler.runOnce('exclusive');
  const atLeast = (await admin.query<{ ms: number }>(untilDue)).rows[0].ms;
  expect(again).toMatchObject({ status: 'skipped', reason: 'not_due' });
  expect(again.nextInMs).toBeLessThanOrEqual(atMost + 0.001); // float8 rounding of the same arithmetic
  expect(again.nextInMs).toBeGreaterThanOrEqual(atLeast - 0.001);
  const rows = await runs('exclusive');
  expect(rows).toEqual([
    expect.objectContaining({ holder: 'a', outcome: 'succeeded', counts: { deleted: 3 }, error: null }),
  ]);
  expect(await metric(a.registry, 'scheduled_job_items_total', { job: 'exclusive', item: 'deleted' })).toBe(3);
  // Stamped at the end of the run: after it was released, before runOnce returned.
  const lastSuccess = await metric(a.registry, 'scheduled_job_last_success_timestamp_seconds', { job: 'exclusive' });
  expect(lastSuccess).toBeGreaterThanOrEqual(beforeEnd);
  expect(lastSuccess).toBeLessThanOrEqual(afterEnd);
  expect(await metric(b.registry, 'scheduled_job_skips_total', { job: 'exclusive', reason: 'locked' })).toBe(1);
  expect(await metric(b.registry, 'scheduled_job_skips_total', { job: 'exclusive', reason: 'not_due' })).toBe(1);
});

it("records a job's failure and keeps scheduling it", async () => {
  let calls = 0;
  const flaky: ScheduledJob = {
    name: 'flaky',
    intervalMs: 150,
    run: async () => {
      calls += 1;
      if (calls <= 2) throw new Error(`boom ${calls}`);
      return { fixed: 1 };
    },
  };
  const a = replica('a', [flaky]);
  a.scheduler.start();
  await eventually(
    'a successful run after two failures',
    async () => (await runs('flaky')).some((r) => r.outcome === 'succeeded'),
    30_000,
    50,
  );
  await a.scheduler.stop();

  const rows = await runs('flaky');
  expect(rows.slice(0, 3).map((r) => [r.outcome, r.error])).toEqual([
    ['failed', 'boom 1'],
    ['failed', 'boom 2'],
    ['succeeded', null],
  ]);
  expect(await metric(a.registry, 'scheduled_job_runs_total', { job: 'flaky', outcome: 'failed' })).toBe(2);
  expect(
    await metric(a.registry, 'scheduled_job_runs_total', { job: 'flaky', outcome: 'succeeded' }),
  ).toBeGreaterThanOrEqual(1);
  const durations = await metric(a.registry, 'scheduled_job_duration_seconds', { job: 'flaky', outcome: 'failed' });
  expect(durations).toBeGreaterThan(0); // the histogram's _count and buckets for the failed runs
});

it("releases the lock when the holder's connection is terminated, and the other replica takes over", async () => {
  const aStarted = deferred();
  let aReason: unknown;
  let bRuns = 0;
  const job = (onRun: (ctx: JobContext) => Promise<void>): ScheduledJob => ({
    name: 'takeover',
    intervalMs: 300,
    timeoutMs: 30_000,
    run: onRun,
  });
  const a = replica('a', [
    job(async ({ signal }) => {
      aStarted.resolve();
      try {
        await untilAborted(signal);
      } catch (err) {
        aReason = err;
        throw err;
      }
    }),
  ]);
  const b = replica('b', [
    job(async () => {
      bRuns += 1;
    }),
  ]);
  const aAttempt = a.scheduler.runOnce('takeover');
  await aStarted.promise;
  b.scheduler.start();
  await eventually(
    'b skipped while a held the lock',
    async () => (await metric(b.registry, 'scheduled_job_skips_total', { job: 'takeover', reason: 'locked' })) >= 1,
    30_000,
    20,
  );
  expect(bRuns).toBe(0);

  // a's lock connection is the session holding the advisory lock in this test's database.
  const holder = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
  );
  expect(holder.rows).toHaveLength(1);
  await admin.query('SELECT pg_terminate_backend($1)', [holder.rows[0].pid]);

  expect(await aAttempt).toMatchObject({ status: 'ran', outcome: 'aborted' });
  expect(aReason).toBeInstanceOf(LeadershipLostError);
  await eventually('b ran the job', () => bRuns >= 1, 30_000, 20);
  await b.scheduler.stop();
  const rows = await runs('takeover');
  expect(rows[0]).toMatchObject({ holder: 'a', outcome: 'aborted' });
  expect(rows[0].error).toMatch(/lock failed/);
  expect(rows.slice(1).every((r) => r.holder === 'b' && r.outcome === 'succeeded')).toBe(true);
});

it('marks a run left running by a vanished holder as abandoned', async () => {
  await admin.query(
    "INSERT INTO scheduled_job_runs (job, holder, started_at) VALUES ('orphan', 'crashed-pod', now() - interval '1 hour')",
  );
  const a = replica('a', [{ name: 'orphan', intervalMs: 60_000, run: async () => ({ ok: 1 }) }]);
  expect(await a.scheduler.runOnce('orphan')).toMatchObject({ status: 'ran', outcome: 'succeeded' });
  expect((await runs('orphan')).map((r) => [r.holder, r.outcome])).toEqual([
    ['crashed-pod', 'abandoned'],
    ['a', 'succeeded'],
  ]);
});

it('logs and skips when the database cannot be reached, and stops cleanly', async () => {
  const unreachable = new URL(db.url);
  unreachable.port = '1';
  let ran = 0;
  const a = replica('a', [{ name: 'no-db', intervalMs: 100, run: async () => void (ran += 1) }], {
    url: unreachable.toString(),
  });
  expect(await a.scheduler.runOnce('no-db')).toMatchObject({
    status: 'skipped',
    reason: 'database_error',
    nextInMs: 100,
  });
  a.scheduler.start();
  await eventually(
    'several failed attempts',
    async () =>
      (await metric(a.registry, 'scheduled_job_skips_total', { job: 'no-db', reason: 'database_error' })) >= 3,
    30_000,
    20,
  );
  await a.scheduler.stop();
  expect(ran).toBe(0);
});

it('stop() waits for a running job, and aborts one that outlives stopTimeoutMs', async () => {
  const finishing = deferred();
  const a = replica('a', [
    {
      name: 'finishes',
      intervalMs: 60_000,
      run: async () => {
        finishing.resolve();
        await new Promise((r) => setTimeout(r, 300));
        return { done: 1 };
      },
    },
  ]);
  const attempt = a.scheduler.runOnce('finishes');
  await finishing.promise;
  await a.scheduler.stop();
  expect(await attempt).toMatchObject({ status: 'ran', outcome: 'succeeded' });
  expect(await runs('finishes')).toEqual([expect.objectContaining({ outcome: 'succeeded', counts: { done: 1 } })]);

  const stuck = deferred();
  const bLog = recordingLogger();
  const b = replica(
    'b',
    [
      {
        name: 'stuck',
        intervalMs: 60_000,
        run: async ({ signal }) => {
          stuck.resolve();
          await untilAborted(signal);
        },
      },
    ],
    { stopTimeoutMs: 100, logger: bLog.logger },
  );
  const stuckAttempt = b.scheduler.runOnce('stuck');
  await stuck.promise;
  await b.scheduler.stop(); // resolves at all: the job would otherwise wait for ever
  expect(await stuckAttempt).toMatchObject({ status: 'ran', outcome: 'aborted' });
  const [row] = await runs('stuck');
  expect(row.outcome).toBe('aborted');
  expect(row.error).toMatch(/stopping/);
  // The abort came from the stopTimeoutMs asked for (not the 10 s default), and not before it.
  expect(bLog.lines).toContainEqual(
    expect.objectContaining({
      msg: 'scheduled jobs still running at stop: aborting them',
      stopTimeoutMs: 100,
      jobs: 1,
    }),
  );
  expect(row.duration_ms).toBeGreaterThanOrEqual(100);
  const locks = await admin.query(
    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
  );
  expect(locks.rowCount).toBe(0);
});

it('more jobs due at once than the pool has connections: they take turns and all run (none waits forever for a connection)', async () => {
  // Eight jobs on a pool of four, all forced at the same moment. Each run holds its lock's connection
  // and works through another: unbounded, the first four lock connections would leave none to work
  // through, and every run (and the pool) would wait forever.
  const names = Array.from({ length: 8 }, (_, i) => `turns-${i}`);
  const pool = createPgPool(db.url, { max: 4, applicationName: 'scheduler-test-turns' });
  let running = 0;
  let most = 0;
  const scheduler = createScheduler({
    pool,
    logger: testLogger('turns'),
    jobs: names.map((name) => ({
      name,
      intervalMs: 60_000,
      run: async ({ pool: p }: JobContext) => {
        most = Math.max(most, ++running);
        try {
          await p.query('SELECT pg_sleep(0.05)');
          return { slept: 1 };
        } finally {
          running--;
        }
      },
    })),
  });
  cleanup.push(async () => {
    await scheduler.stop();
    await pool.end();
  });
  const attempts = await Promise.all(names.map((name) => scheduler.runOnce(name, { force: true })));
  expect(attempts.map((a) => (a.status === 'ran' ? a.outcome : a.status))).toEqual(names.map(() => 'succeeded'));
  expect(most).toBe(2); // half the pool: each running job is counted its lock and its work
  expect(() => createScheduler({ pool, logger: testLogger('turns'), jobs: [], maxConcurrentRuns: 4 })).toThrow(
    /maxConcurrentRuns must be an integer from 1 to the pool's size less one \(3\), got 4/,
  );
}, 60_000);

it('runOnce({ force }) runs a job that is not due, still under its lock; dryRun reaches the job and is recorded', async () => {
  const seen: boolean[] = [];
  const job: ScheduledJob = {
    name: 'forced',
    intervalMs: 3_600_000,
    run: async ({ dryRun }: JobContext) => (seen.push(dryRun), { done: 1 }),
  };
  const a = replica('a', [job]);
  const b = replica('b', [job]);
  expect(await a.scheduler.runOnce('forced')).toMatchObject({ status: 'ran', counts: { done: 1 } });
  // Within the interval: not due, unless forced.
  expect(await b.scheduler.runOnce('forced')).toMatchObject({ status: 'skipped', reason: 'not_due' });
  expect(await b.scheduler.runOnce('forced', { force: true, dryRun: true })).toMatchObject({
    status: 'ran',
    outcome: 'succeeded',
    counts: { done: 1, dry_run: 1 },
  });
  expect(seen).toEqual([false, true]);
  expect((await runs('forced')).map((r) => [r.holder, r.outcome, r.counts])).toEqual([
    ['a', 'succeeded', { done: 1 }],
    ['b', 'succeeded', { done: 1, dry_run: 1 }],
  ]);
  // Forced is still exclusive: while a holds the lock, b is refused.
  let release!: () => void;
  const slow: ScheduledJob = {
    name: 'forced-slow',
    intervalMs: 3_600_000,
    run: () => new Promise<void>((r) => (release = r)),
  };
  const c = replica('c', [slow]);
  const d = replica('d', [slow]);
  const running = c.scheduler.runOnce('forced-slow', { force: true });
  await eventually('c holds the lock', async () => (await runs('forced-slow')).length === 1);
  expect(await d.scheduler.runOnce('forced-slow', { force: true })).toMatchObject({
    status: 'skipped',
    reason: 'locked',
  });
  release();
  expect(await running).toMatchObject({ status: 'ran', outcome: 'succeeded' });
});

it("reads back each job's latest run, and the latest real success of a group of jobs (dry runs left out)", async () => {
  let fail = false;
  const jobs: ScheduledJob[] = ['hist-a', 'hist-b'].map((name) => ({
    name,
    intervalMs: 3_600_000,
    run: async () => {
      if (fail) throw new Error('boom');
      return { found: name === 'hist-a' ? 3 : 5 };
    },
  }));
  const a = replica('hist', jobs);
  expect(await lastSucceededRun(a.pool, ['hist-a', 'hist-b'])).toBeNull();
  await a.scheduler.runOnce('hist-a');
  await a.scheduler.runOnce('hist-b', { dryRun: true });
  expect(await lastSucceededRun(a.pool, ['hist-a', 'hist-b'])).toMatchObject({ job: 'hist-a', counts: { found: 3 } });
  fail = true;
  await a.scheduler.runOnce('hist-a', { force: true });
  const latest = await lastJobRuns(a.pool, ['hist-a', 'hist-b', 'hist-never']);
  expect(latest.map((r) => [r.job, r.holder, r.outcome, r.counts, r.error])).toEqual([
    ['hist-a', 'hist', 'failed', {}, expect.stringContaining('boom')],
    ['hist-b', 'hist', 'succeeded', { found: 5, dry_run: 1 }, null],
  ]);
  expect(latest[0].finishedAt?.getTime()).toBeGreaterThanOrEqual(latest[0].startedAt.getTime());
  // The failure is not a success: the last real one is still hist-a's first run.
  expect(await lastSucceededRun(a.pool, ['hist-a', 'hist-b'])).toMatchObject({ job: 'hist-a', counts: { found: 3 } });
});
