import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** What a job reports it did: bounded names (`deleted`, `batches`), each a count. */
export type JobCounts = Record<string, number>;

/** What a run of a job sees. The job does its work through `pool`, in short transactions. */
export interface JobContext {
  /**
   * Aborted when the run must end early: its deadline passed, the scheduler is stopping, or the
   * connection that holds the job's lock died (another replica may take over). A long job checks
   * it between batches and throws `signal.reason`.
   */
  signal: AbortSignal;
  logger: Logger;
  pool: Pool;
  /** The run's row in `scheduled_job_runs`. */
  runId: string;
  /** An operator asked to see what the run would do: report it, change nothing (runOnce's `dryRun`). */
  dryRun: boolean;
}

export interface ScheduledJob {
  /** Lock key, metrics label and run records: lower case letters, digits and `.:_-`. */
  name: string;
  /** Runs start at least this far apart, across every replica. */
  intervalMs: number;
  /** Deadline of one run, after which its signal is aborted. Default: `intervalMs`. */
  timeoutMs?: number;
  run(ctx: JobContext): Promise<JobCounts | void>;
}

export interface SchedulerOptions {
  /** Needs at least 2 connections: one holds a job's lock while the job works through another. */
  pool: Pool;
  logger: Logger;
  /** Where the `scheduled_job_*` metrics go; none when omitted. */
  registry?: Registry;
  jobs: readonly ScheduledJob[];
  /** Random share of the interval added to every wait (0.1: up to 10 % later), so replicas drift apart. Default 0.1. */
  jitter?: number;
  /** How long stop() waits for a running job before aborting it. Default 10 s. */
  stopTimeoutMs?: number;
  /** Run records older than this are deleted as new runs are recorded. Default 30 days; must exceed every interval. */
  historyMs?: number;
  /** Recorded as the run's holder. Default `<hostname>:<pid>`. */
  holder?: string;
  /** For tests: a source of uniform numbers in [0, 1). */
  random?: () => number;
  /**
   * How many jobs run at once in this process; the others wait their turn, in order. Each running
   * job holds one connection for its lock and works through others, so jobs alone must never be
   * able to take every connection of the pool. Default: half the pool (`pool.options.max`, at least
   * 1); it must leave at least one connection for the work.
   */
  maxConcurrentRuns?: number;
}

export type SkipReason = 'locked' | 'not_due' | 'database_error' | 'stopping';
export type RunOutcome = 'succeeded' | 'failed' | 'aborted';

/** The result of one attempt to run a job, and when the next attempt should come. */
export type Attempt =
  | { status: 'ran'; runId: string; outcome: RunOutcome; counts: JobCounts; error?: Error; nextInMs: number }
  | { status: 'skipped'; reason: SkipReason; error?: Error; nextInMs: number };

export interface Scheduler {
  /** Starts one loop per job; the first attempt of each comes after a random share of the jitter. */
  start(): void;
  /** Ends the loops: waits for running jobs (bounded by `stopTimeoutMs`), then aborts them and releases their locks. */
  stop(): Promise<void>;
  /**
   * One attempt of a job now, under the same lock and due check as the loop (tests, operator commands).
   * `force` skips the due check (an operator's "run now"; the lock still keeps two runs apart);
   * `dryRun` is passed to the job, and recorded as the count `dry_run: 1`.
   */
  runOnce(name: string, options?: RunOnceOptions): Promise<Attempt>;
}

export interface RunOnceOptions {
  force?: boolean;
  dryRun?: boolean;
}
