import type { Pool, PoolClient } from 'pg';
import type { JobCounts, RunOutcome } from './types';

export type BeginResult = { runId: string; abandoned: number } | { runId: null; abandoned: number; msUntilDue: number };

/**
 * Under the job's lock, in one statement:
 *  - any run of this job still `running` is marked `abandoned`: its holder held this lock while it
 *    ran, so if we hold the lock now that holder is gone (crashed, or its connection died);
 *  - the run is due when no run of the job started within the last `intervalMs` (database clock,
 *    the one clock every replica shares): then its row is inserted and its id returned, and the
 *    next replica to take the lock sees this start and waits for the next window.
 *
 * `last` reads the table as it was before this statement (one snapshot for every CTE), so the
 * run inserted here is never its own "last run".
 */
const BEGIN_SQL = `
  WITH abandoned AS (
    UPDATE scheduled_job_runs
       SET outcome = 'abandoned', finished_at = now(), error = 'its holder stopped without recording an end (crash, or its lock connection died)'
     WHERE job = $1 AND outcome = 'running'
     RETURNING id
  ), last AS (
    SELECT max(started_at) AS started_at FROM scheduled_job_runs WHERE job = $1
  ), inserted AS (
    INSERT INTO scheduled_job_runs (job, holder)
    SELECT $1, $2 FROM last
     WHERE last.started_at IS NULL OR last.started_at <= now() - $3::float8 * interval '1 millisecond'
    RETURNING id::text AS id
  )
  SELECT (SELECT id FROM inserted) AS run_id,
         (SELECT count(*) FROM abandoned)::int AS abandoned,
         GREATEST(0, EXTRACT(EPOCH FROM ((SELECT started_at FROM last) + $3::float8 * interval '1 millisecond' - now())) * 1000)::float8 AS ms_until_due`;

export async function beginRun(
  client: PoolClient,
  job: string,
  holder: string,
  intervalMs: number,
): Promise<BeginResult> {
  const res = await client.query<{ run_id: string | null; abandoned: number; ms_until_due: number | null }>(BEGIN_SQL, [
    job,
    holder,
    intervalMs,
  ]);
  const row = res.rows[0];
  if (row.run_id !== null) return { runId: row.run_id, abandoned: row.abandoned };
  return { runId: null, abandoned: row.abandoned, msUntilDue: row.ms_until_due ?? 0 };
}

/**
 * Records the end of a run and trims the job's history, in one statement. Through the pool, not the
 * lock's connection: after that connection died (the reason a run is aborted) the end is still
 * worth recording. `outcome = 'running'` guards a row another holder already marked abandoned.
 */
export async function finishRun(
  pool: Pool,
  run: { job: string; runId: string; outcome: RunOutcome; durationMs: number; counts: JobCounts; error?: string },
  historyMs: number,
): Promise<void> {
  await pool.query(
    `WITH trimmed AS (
       DELETE FROM scheduled_job_runs WHERE job = $1 AND started_at < now() - $7::float8 * interval '1 millisecond' AND id <> $2::bigint
     )
     UPDATE scheduled_job_runs
        SET outcome = $3, finished_at = now(), duration_ms = $4, counts = $5::jsonb, error = $6
      WHERE id = $2::bigint AND outcome = 'running'`,
    [
      run.job,
      run.runId,
      run.outcome,
      Math.min(2_147_483_647, Math.round(run.durationMs)),
      JSON.stringify(run.counts),
      run.error?.slice(0, 2000) ?? null,
      historyMs,
    ],
  );
}
