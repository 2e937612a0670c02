import type { ScheduledJob } from '@community/db';
import type { ReconcilerMetrics } from '../metrics';

/**
 * Adds the reconciler_job_* series (the names alerts use) around a job's run. The scheduler's own
 * `scheduled_job_*` series and its run record in scheduled_job_runs stay as they are.
 */
export function instrument(job: ScheduledJob, metrics: ReconcilerMetrics): ScheduledJob {
  return {
    ...job,
    run: async (ctx) => {
      const stop = metrics.jobDuration.startTimer({ job: job.name });
      try {
        const counts = await job.run(ctx);
        metrics.jobRuns.inc({ job: job.name, outcome: 'succeeded' });
        metrics.jobLastSuccess.set({ job: job.name }, Date.now() / 1000);
        return counts;
      } catch (err) {
        metrics.jobRuns.inc({ job: job.name, outcome: ctx.signal.aborted ? 'aborted' : 'failed' });
        throw err;
      } finally {
        stop();
      }
    },
  };
}
