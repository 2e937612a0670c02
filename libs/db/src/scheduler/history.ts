import type { Pool } from 'pg';
import type { JobCounts } from './types';

/** One run as `scheduled_job_runs` records it (the scheduler writes it: runs.ts). */
export interface JobRunRecord {
  runId: string;
  job: string;
  /** Who ran it (SchedulerOptions.holder). */
  holder: string;
  /** `running`, `succeeded`, `failed`, `aborted` or `abandoned`. */
  outcome: string;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  counts: JobCounts;
  error: string | null;
}

/** The latest run of each of `jobs` that has one (jobs never run are absent), for status pages. */
export async function lastJobRuns(pool: Pool, jobs: readonly string[]): Promise<JobRunRecord[]> {
  const res = await pool.query<{
    id: string;
    job: string;
    holder: string;
    outcome: string;
    started_at: Date;
    finished_at: Date | null;
    duration_ms: number | null;
    counts: JobCounts;
    error: string | null;
  }>(
    `SELECT DISTINCT ON (job) id::text, job, holder, outcome::text, started_at, finished_at, duration_ms, counts, error
       FROM scheduled_job_runs WHERE job = ANY($1::text[])
      ORDER BY job, started_at DESC`,
    [[...jobs]],
  );
  return res.rows.map((r) => ({
    runId: r.id,
    job: r.job,
    holder: r.holder,
    outcome: r.outcome,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    durationMs: r.duration_ms,
    counts: r.counts,
    error: r.error,
  }));
}

/**
 * The run of any of `jobs` that succeeded last, dry runs (`runOnce`'s `dryRun`, recorded as the
 * count `dry_run: 1`) left out: what the work last really found. Null when none succeeded.
 */
export async function lastSucceededRun(
  pool: Pool,
  jobs: readonly string[],
): Promise<{ job: string; finishedAt: Date; counts: JobCounts } | null> {
  const res = await pool.query<{ job: string; finished_at: Date; counts: JobCounts }>(
    `SELECT job, finished_at, counts FROM scheduled_job_runs
      WHERE job = ANY($1::text[]) AND outcome = 'succeeded' AND NOT coalesce((counts->>'dry_run')::int = 1, false)
      ORDER BY finished_at DESC LIMIT 1`,
    [[...jobs]],
  );
  const r = res.rows[0];
  return r ? { job: r.job, finishedAt: r.finished_at, counts: r.counts } : null;
}
