import type { Pool } from 'pg';
import type { JobRun } from '../domain/status';

export interface JobRunRow extends JobRun {
  runId: string;
  holder: string;
  durationMs: number | null;
  counts: Record<string, number>;
}

/** The last run of each of `jobs` (scheduled_job_runs, written by libs/db's scheduler). */
export async function lastRuns(pool: Pool, jobs: readonly string[]): Promise<JobRunRow[]> {
  const res = await pool.query<{
    id: string;
    job: string;
    holder: string;
    outcome: string;
    started_at: Date;
    finished_at: Date | null;
    duration_ms: number | null;
    counts: Record<string, number>;
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
