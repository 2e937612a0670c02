import type { ScheduledJob } from '@community/db';
import { purgeExpired } from '../store/request-keys';

/** The name in scheduled_job_runs, the advisory lock and the scheduled_job_* metrics. */
export const REQUEST_KEYS_PURGE_JOB = 'demo-community-api.request-keys-purge';

/**
 * Deletes expired community_request_keys rows (producer-side dedup), in batches, on one replica at a
 * time (libs/db scheduler). An expired row answers nothing any more (a claim takes it over), so the
 * purge only keeps the table small; a run cut short is continued by the next.
 */
export function requestKeysPurgeJob(o: { intervalMs: number; batchSize: number; clock?: () => Date }): ScheduledJob {
  return {
    name: REQUEST_KEYS_PURGE_JOB,
    intervalMs: o.intervalMs,
    run: ({ pool, signal, dryRun }) => purgeExpired(pool, { batchSize: o.batchSize, now: o.clock?.(), signal, dryRun }),
  };
}
