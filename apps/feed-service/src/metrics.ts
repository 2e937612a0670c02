import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface FeedMetrics {
  fanoutLag: Histogram;
  chunksInFlight: Gauge;
  chunks: Counter<'outcome'>;
  fanoutYield: Counter<'outcome'>;
  cacheReads: Counter<'result'>;
  regenerations: Counter;
  backfills: Counter<'action'>;
  redisErrors: Counter;
}

/**
 * Service-level series (docs/FEED.md "Metrics"), beside the runtime's (messages, retries, DLQ).
 * Dashboards and alerts are written against these names: keep them.
 */
export function feedMetrics(registry: Registry): FeedMetrics {
  return {
    fanoutLag: new Histogram({
      name: 'feed_fanout_lag_seconds',
      help: "From a post's publication (occurredAt) to the last follower's feed insert of its fan-out",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers: [registry],
    }),
    chunksInFlight: new Gauge({
      name: 'feed_fanout_chunks_in_flight',
      help: 'Fan-out chunks being written on this replica',
      registers: [registry],
    }),
    chunks: new Counter({
      name: 'feed_fanout_chunks_total',
      help: 'Fan-out chunks by outcome: done (written and checkpointed), skipped (already done: a redelivery or a resume), failed (retried)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    fanoutYield: new Counter({
      name: 'feed_fanout_yield_seconds_total',
      help: 'Time chunk writers of large fan-outs paused for small-lane work in flight, by how the pause ended: resumed (the small lane was done) or capped (FEED_FANOUT_YIELD_MAX_MS spent for the chunk)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    cacheReads: new Counter({
      name: 'feed_cache_reads_total',
      help: 'Feed reads by result: hit (materialised feed in Redis), miss (regenerated or read from Postgres while another replica rebuilds), fallback (Redis unavailable: answered from Postgres)',
      labelNames: ['result'],
      registers: [registry],
    }),
    regenerations: new Counter({
      name: 'feed_regenerations_total',
      help: 'Feeds rebuilt from the Postgres projections (first read of an inactive user, after a flush)',
      registers: [registry],
    }),
    backfills: new Counter({
      name: 'feed_backfill_total',
      help: "Follow/unfollow reconciliations on the backfill lane: backfilled (followee's posts copied), removed, skipped (feed not materialised)",
      labelNames: ['action'],
      registers: [registry],
    }),
    redisErrors: new Counter({
      name: 'feed_redis_errors_total',
      help: 'Redis connection errors reported by the client',
      registers: [registry],
    }),
  };
}
