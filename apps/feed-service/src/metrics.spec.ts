import { Registry } from 'prom-client';
import { feedMetrics } from './metrics';

it('names every series feed_… with base units', async () => {
  const registry = new Registry();
  feedMetrics(registry);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
  expect(names).toEqual([
    'feed_backfill_total',
    'feed_cache_reads_total',
    'feed_fanout_chunks_in_flight',
    'feed_fanout_chunks_total',
    'feed_fanout_lag_seconds',
    'feed_fanout_yield_seconds_total',
    'feed_redis_errors_total',
    'feed_regenerations_total',
  ]);
});
