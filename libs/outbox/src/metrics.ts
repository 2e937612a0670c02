import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Pool } from 'pg';
import type { Logger } from 'pino';

export interface OutboxMetrics {
  published: Counter<'producer' | 'outcome'>;
  publishToMark: Histogram<'producer'>;
  batchSize: Histogram<'producer'>;
  /** Registers a producer whose backlog and lag are read from its pool on every scrape. */
  watch(producer: string, pool: Pool, logger: Logger): () => void;
}

interface Source {
  pool: Pool;
  logger: Logger;
}

const cache = new WeakMap<Registry, OutboxMetrics>();

/**
 * Idempotent per registry (two relays in one process share the series). Backlog and lag are read
 * from the table when Prometheus scrapes, not tracked in memory: with several relay replicas, only
 * the table knows the whole backlog.
 */
export function outboxMetrics(registry: Registry): OutboxMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const sources = new Map<string, Source>();
  let snapshot: Promise<Map<string, { backlog: number; lagSeconds: number }>> | undefined;

  async function read(): Promise<Map<string, { backlog: number; lagSeconds: number }>> {
    const out = new Map<string, { backlog: number; lagSeconds: number }>();
    for (const [producer, { pool, logger }] of sources) {
      try {
        const { rows } = await pool.query<{ backlog: string; lag: number | null }>(
          `SELECT count(*) AS backlog, extract(epoch FROM now() - min(created_at))::float8 AS lag
           FROM outbox_messages WHERE producer = $1 AND sent_at IS NULL`,
          [producer],
        );
        out.set(producer, { backlog: Number(rows[0].backlog), lagSeconds: Math.max(0, rows[0].lag ?? 0) });
      } catch (err) {
        // A scrape must not fail because the database is down; the series just goes missing.
        logger.warn({ err: (err as Error).message, producer }, 'outbox metrics: could not read the backlog');
      }
    }
    return out;
  }
  // prom-client starts every collect() of a scrape in the same tick, so both gauges share one read;
  // the next scrape reads again.
  function current() {
    snapshot ??= read().finally(() => (snapshot = undefined));
    return snapshot;
  }

  const m: OutboxMetrics = {
    published: new Counter({
      name: 'outbox_published_total',
      help: 'Outbox rows handed to the broker, by outcome (confirmed, unroutable, rejected, timeout, error)',
      labelNames: ['producer', 'outcome'],
      registers,
    }),
    publishToMark: new Histogram({
      name: 'outbox_publish_to_mark_seconds',
      help: 'Time from publishing a claimed batch to committing its sent marks (confirm round trip + update)',
      labelNames: ['producer'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    batchSize: new Histogram({
      name: 'outbox_batch_size',
      help: 'Rows claimed per relay cycle',
      labelNames: ['producer'],
      buckets: [1, 5, 10, 25, 50, 100, 200, 500, 1000],
      registers,
    }),
    watch(producer, pool, logger) {
      sources.set(producer, { pool, logger });
      return () => {
        if (sources.get(producer)?.pool === pool) sources.delete(producer);
      };
    },
  };
  new Gauge({
    name: 'outbox_backlog_messages',
    help: 'Outbox rows not yet confirmed by the broker',
    labelNames: ['producer'],
    registers,
    async collect() {
      this.reset();
      for (const [producer, s] of await current()) this.set({ producer }, s.backlog);
    },
  });
  new Gauge({
    name: 'outbox_lag_seconds',
    help: 'Age of the oldest outbox row not yet confirmed (0 when none)',
    labelNames: ['producer'],
    registers,
    async collect() {
      this.reset();
      for (const [producer, s] of await current()) this.set({ producer }, s.lagSeconds);
    },
  });
  cache.set(registry, m);
  return m;
}
