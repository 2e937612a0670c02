import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Metrics of scheduled jobs, in base units; labels are bounded (job names, fixed outcomes, the jobs' count names). */
export interface SchedulerMetrics {
  runs: Counter<'job' | 'outcome'>;
  skips: Counter<'job' | 'reason'>;
  duration: Histogram<'job' | 'outcome'>;
  lastSuccess: Gauge<'job'>;
  items: Counter<'job' | 'item'>;
}

const cache = new WeakMap<Registry, SchedulerMetrics>();

/** Idempotent per registry: several schedulers in one process (two apps' jobs, tests) share the series. */
export function schedulerMetrics(registry: Registry): SchedulerMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const m: SchedulerMetrics = {
    runs: new Counter({
      name: 'scheduled_job_runs_total',
      help: 'Runs of a scheduled job by outcome (succeeded, failed, aborted)',
      labelNames: ['job', 'outcome'],
      registers,
    }),
    skips: new Counter({
      name: 'scheduled_job_skips_total',
      help: 'Attempts that did not run the job: locked (another replica runs it), not_due (it ran within the interval), database_error, stopping (stop() came while it waited its turn)',
      labelNames: ['job', 'reason'],
      registers,
    }),
    // From a quick purge of nothing to a long backlog of deletes.
    duration: new Histogram({
      name: 'scheduled_job_duration_seconds',
      help: 'Duration of a scheduled job run',
      labelNames: ['job', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    }),
    lastSuccess: new Gauge({
      name: 'scheduled_job_last_success_timestamp_seconds',
      help: 'End of the last successful run of a job in this process (Unix time)',
      labelNames: ['job'],
      registers,
    }),
    items: new Counter({
      name: 'scheduled_job_items_total',
      help: 'What scheduled jobs report they did (e.g. rows deleted), by job and count name',
      labelNames: ['job', 'item'],
      registers,
    }),
  };
  cache.set(registry, m);
  return m;
}
