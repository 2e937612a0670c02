import { Counter, Gauge, type Registry } from 'prom-client';
import type { Pool } from 'pg';
import { summaryByQueue } from './store';

export interface DlqMetrics {
  newCauses: Counter;
  actions: Counter<'action' | 'outcome'>;
  ingested: Counter<'queue'>;
}

/**
 * The console's series. The two gauges are read from Postgres at scrape time (the table is the
 * truth, and every replica reports the same figures); a failed read keeps the previous values and
 * is logged by the caller's `onError`.
 */
export function dlqMetrics(
  registry: Registry,
  pool: Pool,
  dlqs: readonly string[],
  onError: (err: unknown) => void,
): DlqMetrics {
  let last = new Map<string, { pending: number; oldest: number }>();
  let inFlight: Promise<void> | null = null;
  const refresh = (): Promise<void> =>
    (inFlight ??= summaryByQueue(pool)
      .then((rows) => {
        last = new Map(rows.map((r) => [r.queue, { pending: r.pending, oldest: r.oldestAgeSeconds ?? 0 }]));
      })
      .catch(onError)
      .finally(() => {
        inFlight = null;
      }));

  new Gauge({
    name: 'reconciler_dlq_messages',
    help: 'Dead letters waiting for a decision (state pending), by DLQ',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      await refresh();
      for (const q of dlqs) this.set({ queue: q }, last.get(q)?.pending ?? 0);
    },
  });
  new Gauge({
    name: 'reconciler_dlq_oldest_age_seconds',
    help: 'Age of the oldest pending dead letter, by DLQ (0 when none)',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      await refresh();
      for (const q of dlqs) this.set({ queue: q }, last.get(q)?.oldest ?? 0);
    },
  });
  return {
    newCauses: new Counter({
      name: 'reconciler_dlq_new_causes_total',
      help: 'Dead letters whose cause (fingerprint) was never seen before',
      registers: [registry],
    }),
    actions: new Counter({
      name: 'reconciler_dlq_actions_total',
      help: 'Messages replayed or discarded from the console, by action (replay, discard) and outcome (ok, failed, skipped)',
      labelNames: ['action', 'outcome'],
      registers: [registry],
    }),
    ingested: new Counter({
      name: 'reconciler_dlq_ingested_total',
      help: 'Dead letters read from a DLQ and stored (duplicates of a stored copy excluded), by DLQ',
      labelNames: ['queue'],
      registers: [registry],
    }),
  };
}
