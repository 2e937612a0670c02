import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The reconciler's series (names fixed with the dashboards and alerts, docs/RECONCILER.md). The
 * scheduler adds its generic `scheduled_job_*`; these are the ones alerts are built on.
 */
export interface ReconcilerMetrics {
  jobRuns: Counter<'job' | 'outcome'>;
  jobDuration: Histogram<'job'>;
  jobLastSuccess: Gauge<'job'>;
  driftUsers: Gauge;
  driftAbs: Histogram;
  repairs: Counter;
  watchdogFindings: Gauge<'queue' | 'kind'>;
  stuckWork: Gauge<'kind'>;
  /** At least this many due rows of a queue's work have no message in any queue (domain/lost-work.ts). */
  lostWork: Gauge<'queue'>;
  outboxLag: Gauge;
  feedsChecked: Counter<'source'>;
  feedsMismatched: Counter<'source'>;
  feedsRebuilt: Counter<'source'>;
  feedRedisErrors: Counter;
  fanoutRepublished: Counter;
}

export function reconcilerMetrics(registry: Registry): ReconcilerMetrics {
  const registers = [registry];
  const m: ReconcilerMetrics = {
    jobRuns: new Counter({
      name: 'reconciler_job_runs_total',
      help: 'Runs of a reconciler job by outcome (succeeded, failed, aborted)',
      labelNames: ['job', 'outcome'],
      registers,
    }),
    jobDuration: new Histogram({
      name: 'reconciler_job_duration_seconds',
      help: 'Duration of a reconciler job run',
      labelNames: ['job'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    }),
    jobLastSuccess: new Gauge({
      name: 'reconciler_job_last_success_timestamp_seconds',
      help: 'End of the last successful run of a job on this replica (Unix time)',
      labelNames: ['job'],
      registers,
    }),
    driftUsers: new Gauge({
      name: 'reconciler_counter_drift_users',
      help: 'Users whose stored unread counter differed from the recount in the last recount run',
      registers,
    }),
    driftAbs: new Histogram({
      name: 'reconciler_counter_drift_abs',
      help: '|stored − recount| of each drifted unread counter',
      buckets: [1, 2, 5, 10, 50, 100, 1000, 10000],
      registers,
    }),
    repairs: new Counter({
      name: 'reconciler_counter_repairs_total',
      help: 'Unread counters set to their recount (each one audited in counter_repairs)',
      registers,
    }),
    watchdogFindings: new Gauge({
      name: 'reconciler_watchdog_findings',
      help: '1 while the watchdog reports this queue for this kind (stalled: depth grows and nothing is acked; no_consumer; dlq_growing)',
      labelNames: ['queue', 'kind'],
      registers,
    }),
    lostWork: new Gauge({
      name: 'reconciler_lost_work',
      help: 'Due rows whose message no queue holds at the last watchdog run, by the queue that should hold them (a lower bound: docs/RECONCILER.md "Lost work")',
      labelNames: ['queue'],
      registers,
    }),
    stuckWork: new Gauge({
      name: 'reconciler_stuck_work',
      help: 'Work items stuck at the last check, by kind (outbox_unsent, email_lease_expired, fanout_chunk)',
      labelNames: ['kind'],
      registers,
    }),
    outboxLag: new Gauge({
      name: 'reconciler_outbox_lag_seconds',
      help: 'Age of the oldest unsent outbox row (0 when none), at the last check',
      registers,
    }),
    feedsChecked: new Counter({
      name: 'reconciler_feeds_checked_total',
      help: 'Materialised feeds compared with the projections, by source (job, api)',
      labelNames: ['source'],
      registers,
    }),
    feedsMismatched: new Counter({
      name: 'reconciler_feeds_mismatched_total',
      help: 'Checked feeds that differed from the projections, by source',
      labelNames: ['source'],
      registers,
    }),
    feedsRebuilt: new Counter({
      name: 'reconciler_feeds_rebuilt_total',
      help: 'Feeds rebuilt from the projections, by source',
      labelNames: ['source'],
      registers,
    }),
    feedRedisErrors: new Counter({
      name: 'reconciler_feed_redis_errors_total',
      help: "Errors of the connection to feed-service's Redis",
      registers,
    }),
    fanoutRepublished: new Counter({
      name: 'reconciler_fanout_chunks_republished_total',
      help: 'Stuck fan-out chunk messages re-published to feed-service.fanout',
      registers,
    }),
  };
  // The feed counters exist at 0 from the start (a labelled counter has no series before its first
  // increment): "checked 0, mismatched 0" is an answer a dashboard and an alert can use.
  for (const source of ['job', 'api']) {
    m.feedsChecked.inc({ source }, 0);
    m.feedsMismatched.inc({ source }, 0);
    m.feedsRebuilt.inc({ source }, 0);
  }
  m.stuckWork.set({ kind: 'fanout_chunk' }, 0);
  return m;
}
