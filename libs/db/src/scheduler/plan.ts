import { createHash } from 'node:crypto';
import type { ScheduledJob } from './types';

const JOB_NAME = /^[a-z0-9][a-z0-9.:_-]{0,99}$/;

/**
 * The advisory lock key of a job: the first 8 bytes of SHA-256("scheduled-job:" + name) as a signed
 * bigint (decimal text, for `$1::bigint`). Computed here rather than with Postgres' `hashtext()`,
 * whose result is not promised to stay the same across major versions: every replica of every
 * version must compute the same key. 64 bits make a clash with another lock of the database
 * (the migration runner's 72707369) or another job negligible.
 */
export function advisoryLockKey(jobName: string): string {
  return createHash('sha256').update(`scheduled-job:${jobName}`).digest().readBigInt64BE(0).toString();
}

/**
 * How long to wait before the next attempt: `baseMs`, plus up to `jitter × intervalMs` drawn
 * uniformly, so replicas that started together drift apart instead of all trying at once.
 */
export function nextWaitMs(
  baseMs: number,
  intervalMs: number,
  jitter: number,
  random: () => number = Math.random,
): number {
  return Math.max(0, Math.round(baseMs + random() * jitter * intervalMs));
}

/** Refuses a job list that cannot run as asked, naming the job and the field. */
export function validateJobs(jobs: readonly ScheduledJob[], historyMs: number): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  jobs.forEach((job, i) => {
    const at = `jobs[${i}] ("${job.name}")`;
    if (!JOB_NAME.test(job.name)) problems.push(`${at}.name: must match ${JOB_NAME}`);
    if (seen.has(job.name)) problems.push(`${at}.name: declared twice`);
    seen.add(job.name);
    if (!Number.isFinite(job.intervalMs) || job.intervalMs <= 0)
      problems.push(`${at}.intervalMs: must be a positive number of ms`);
    // The due check reads the last recorded start: history must keep it for a whole interval.
    else if (job.intervalMs >= historyMs)
      problems.push(`${at}.intervalMs: must be shorter than the run history kept (${historyMs} ms)`);
    if (job.timeoutMs !== undefined && !(job.timeoutMs > 0))
      problems.push(`${at}.timeoutMs: must be a positive number of ms`);
  });
  if (problems.length > 0) throw new RangeError(`invalid scheduled jobs:\n  - ${problems.join('\n  - ')}`);
}
