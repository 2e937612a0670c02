import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { isTransactionPooled } from '../pool';
import { JobLock } from './lock';
import { schedulerMetrics, type SchedulerMetrics } from './metrics';
import { advisoryLockKey, nextWaitMs, validateJobs } from './plan';
import { beginRun, finishRun } from './runs';
import type {
  Attempt,
  JobCounts,
  RunOnceOptions,
  RunOutcome,
  ScheduledJob,
  Scheduler,
  SchedulerOptions,
  SkipReason,
} from './types';

const DAY_MS = 86_400_000;

/** The scheduler is stopping and the job outlived stopTimeoutMs. */
export class SchedulerStoppingError extends Error {
  override name = 'SchedulerStoppingError';
  constructor() {
    super('the scheduler is stopping');
  }
}

/** A run reached its job's timeoutMs. */
export class JobTimeoutError extends Error {
  override name = 'JobTimeoutError';
  constructor(timeoutMs: number) {
    super(`the run did not finish within ${timeoutMs} ms`);
  }
}

interface InFlight {
  lock: JobLock;
  controller: AbortController;
}

/**
 * Runs each job about once per `intervalMs` across every replica that runs the same jobs on the same
 * database (single leadership):
 *
 *   wait (+ jitter) → try the job's advisory lock ─ held elsewhere → skip ("locked")
 *                                │ acquired
 *                     a run started within the interval? ─ yes → skip ("not_due"), wake when due
 *                                │ no: record the start (scheduled_job_runs)
 *                     run the job → record outcome, duration, counts → unlock
 *
 * The lock alone would only keep two runs from overlapping; the recorded start under the lock is
 * what makes it once per interval window, whichever replica wakes first.
 *
 * Nothing here may crash the process: a database error (Postgres down, restarted, a connection
 * terminated) is logged and counted and the job is tried again at the next interval; a job's own
 * error is recorded as a failed run. Jobs must tolerate being cut short and, rarely, overlapping:
 * a holder whose lock connection dies is told to stop (ctx.signal), but it may still be finishing
 * a statement when another replica takes over. Deleting already-expired rows is such a job.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { pool, logger, jobs } = options;
  // A job's lock is a session advisory lock held on an idle connection (./lock.ts). Through PgBouncer
  // in transaction mode that session goes back to PgBouncer's pool after the statement, and the next
  // client to get it "takes" the same lock again (advisory locks are re-entrant per session).
  if (isTransactionPooled(pool))
    throw new Error(
      'the scheduler needs a pool with direct connections to PostgreSQL: its session advisory locks cannot go through a transaction pooler (pgbouncer=true)',
    );
  const jitter = options.jitter ?? 0.1;
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`scheduler jitter must be within [0, 1], got ${jitter}`);
  const stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
  const historyMs = options.historyMs ?? 30 * DAY_MS;
  const holder = options.holder ?? `${hostname()}:${process.pid}`;
  const random = options.random ?? Math.random;
  validateJobs(jobs, historyMs);
  const metrics: SchedulerMetrics | undefined = options.registry ? schedulerMetrics(options.registry) : undefined;
  // Without a bound, jobs that come due together (their first attempts all fall within the jitter)
  // each check out a lock connection until none is left, and then wait forever for one to work
  // through: the pool, the jobs and every HTTP request of the process with them, stuck. Seen: the
  // reconciler's 11 jobs on its 8 connections, every interval at 3 s (e2e/database-roles.test.ts).
  const poolMax = pool.options?.max ?? 10; // pg-pool's default size
  const maxConcurrentRuns = options.maxConcurrentRuns ?? Math.max(1, Math.floor(poolMax / 2));
  if (!(Number.isInteger(maxConcurrentRuns) && maxConcurrentRuns >= 1 && maxConcurrentRuns < poolMax))
    throw new RangeError(
      `scheduler maxConcurrentRuns must be an integer from 1 to the pool's size less one (${poolMax - 1}), got ${maxConcurrentRuns}`,
    );
  const turns = new Turns(maxConcurrentRuns);
  const byName = new Map(jobs.map((j) => [j.name, j]));
  const inFlight = new Set<InFlight>();
  /** Every attempt under way, the loops' and runOnce's: stop() waits for them all. */
  const attempts = new Set<Promise<Attempt>>();
  const stopSleeping = new AbortController();
  let loops: Promise<void>[] | undefined;
  let stopping = false;

  function skipped(job: ScheduledJob, reason: SkipReason, nextInMs: number, error?: Error): Attempt {
    metrics?.skips.inc({ job: job.name, reason });
    return { status: 'skipped', reason, nextInMs, ...(error ? { error } : {}) };
  }

  function attempt(job: ScheduledJob, options: RunOnceOptions = {}): Promise<Attempt> {
    const p = attemptOnce(job, options).finally(() => attempts.delete(p));
    attempts.add(p);
    return p;
  }

  async function attemptOnce(job: ScheduledJob, options: RunOnceOptions): Promise<Attempt> {
    await turns.take();
    try {
      // stop() came while this attempt waited its turn: the job runs at the next holder's window.
      if (stopping) return skipped(job, 'stopping', job.intervalMs);
      return await attemptWithTurn(job, options);
    } finally {
      turns.give();
    }
  }

  async function attemptWithTurn(job: ScheduledJob, options: RunOnceOptions): Promise<Attempt> {
    const log = logger.child({ job: job.name });
    let lock: JobLock | undefined;
    try {
      lock = await JobLock.tryAcquire(pool, advisoryLockKey(job.name));
      if (!lock) return skipped(job, 'locked', job.intervalMs);
      // A forced run is due whatever ran before it (an interval of 0).
      const begun = await beginRun(lock.client, job.name, holder, options.force ? 0 : job.intervalMs);
      if (begun.abandoned > 0)
        log.warn({ abandoned: begun.abandoned }, 'runs left running by a holder that is gone were marked abandoned');
      if (begun.runId === null) return skipped(job, 'not_due', begun.msUntilDue);
      return await execute(job, lock, begun.runId, log, options.dryRun === true);
    } catch (err) {
      log.warn({ err }, 'scheduled job not run: database error; trying again at the next interval');
      return skipped(job, 'database_error', job.intervalMs, err as Error);
    } finally {
      await lock?.release();
    }
  }

  async function execute(
    job: ScheduledJob,
    lock: JobLock,
    runId: string,
    log: Logger,
    dryRun: boolean,
  ): Promise<Attempt> {
    const timeoutMs = job.timeoutMs ?? job.intervalMs;
    const entry: InFlight = { lock, controller: new AbortController() };
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new JobTimeoutError(timeoutMs)), timeoutMs);
    timer.unref();
    const signal = AbortSignal.any([entry.controller.signal, lock.lost, deadline.signal]);
    inFlight.add(entry);
    const started = performance.now();
    let outcome: RunOutcome;
    let counts: JobCounts = {};
    let error: Error | undefined;
    try {
      counts = sanitize(await job.run({ signal, logger: log, pool, runId, dryRun }));
      if (dryRun) counts.dry_run = 1;
      outcome = 'succeeded';
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
      outcome = signal.aborted ? 'aborted' : 'failed';
    } finally {
      clearTimeout(timer);
      inFlight.delete(entry);
    }
    const durationMs = performance.now() - started;
    metrics?.runs.inc({ job: job.name, outcome });
    metrics?.duration.observe({ job: job.name, outcome }, durationMs / 1000);
    for (const [item, n] of Object.entries(counts)) metrics?.items.inc({ job: job.name, item }, n);
    const detail =
      outcome === 'aborted'
        ? `aborted: ${(signal.reason as Error)?.message ?? 'signal aborted'} (${error?.message})`
        : error?.message;
    if (outcome === 'succeeded') {
      metrics?.lastSuccess.set({ job: job.name }, Date.now() / 1000);
      log.info({ runId, counts, durationMs: Math.round(durationMs) }, 'scheduled job run succeeded');
    } else {
      log.error(
        { runId, err: error, outcome, counts, durationMs: Math.round(durationMs) },
        `scheduled job run ${outcome}; next try at the next interval`,
      );
    }
    try {
      await finishRun(pool, { job: job.name, runId, outcome, durationMs, counts, error: detail }, historyMs);
    } catch (err) {
      log.warn({ err, runId }, 'could not record the end of the run (the next holder of the lock marks it abandoned)');
    }
    return {
      status: 'ran',
      runId,
      outcome,
      counts,
      nextInMs: Math.max(0, job.intervalMs - durationMs),
      ...(error ? { error } : {}),
    };
  }

  async function loop(job: ScheduledJob): Promise<void> {
    // The first attempt comes after a random share of the jitter only: replicas that start
    // together spread out, and a job overdue since the last deploy runs soon.
    let waitMs = nextWaitMs(0, job.intervalMs, jitter, random);
    while (!stopping) {
      try {
        await sleep(waitMs, undefined, { signal: stopSleeping.signal });
      } catch {
        return; // stop() woke us
      }
      if (stopping) return;
      const result = await attempt(job);
      waitMs = nextWaitMs(result.nextInMs, job.intervalMs, jitter, random);
    }
  }

  return {
    start() {
      if (loops) return;
      loops = jobs.map((job) =>
        // attempt() catches everything it expects; this is the last line that keeps a bug in the
        // loop itself from becoming an unhandled rejection (a crash).
        loop(job).catch((err: Error) =>
          logger.error({ err, job: job.name }, 'scheduled job loop ended by an unexpected error'),
        ),
      );
    },

    async stop() {
      stopping = true;
      stopSleeping.abort();
      const done = Promise.all([...(loops ?? []), ...[...attempts].map((p) => p.catch(() => undefined))]).then(
        () => true,
      );
      if (await within(done, stopTimeoutMs)) return;
      logger.warn({ jobs: inFlight.size, stopTimeoutMs }, 'scheduled jobs still running at stop: aborting them');
      for (const entry of inFlight) entry.controller.abort(new SchedulerStoppingError());
      if (await within(done, 1_000)) return;
      // A job that ignores its signal cannot be cancelled from here; ending its lock connection at
      // least hands the job to another replica's next window instead of holding it until exit.
      for (const entry of inFlight) entry.lock.destroy(new SchedulerStoppingError());
      logger.error(
        { jobs: inFlight.size },
        'scheduled jobs ignored the abort; their locks were released by closing their connections',
      );
    },

    runOnce(name: string, options?: RunOnceOptions): Promise<Attempt> {
      const job = byName.get(name);
      if (!job) return Promise.reject(new Error(`no scheduled job named "${name}"`));
      return attempt(job, options);
    },
  };
}

/** Only finite, non-negative numbers: they become counter increments and JSON. */
function sanitize(counts: JobCounts | void): JobCounts {
  const out: JobCounts = {};
  for (const [k, v] of Object.entries(counts ?? {}))
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[k] = v;
  return out;
}

/** True when `p` settles within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([p.then(() => true), sleep(ms, false, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}

/**
 * At most `size` holders at once; the others wait in arrival order. Hand-written (a dozen lines):
 * the well-kept limiters (p-limit, p-queue) are ES modules only, which jest (CommonJS, where every
 * spec of this lib runs) cannot load.
 */
class Turns {
  private readonly waiting: Array<() => void> = [];
  constructor(private free: number) {}

  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Hands the turn to the next waiter, or frees it. */
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
