import type { Pool } from 'pg';
import type { ScheduledJob } from '@community/db';

/**
 * Inbox retention. Purging an inbox row reopens the door for that event id, so the horizon must be
 * longer than any bounded way a duplicate can still arrive through the runtime (`longestRedeliveryMs`:
 * the whole retry chain, 1 s + 5 s + 30 s + 2 min + 10 min ≈ 13 min, with every redelivery running
 * to its deadline, about 18 min for notification-service), and a relay re-publishing after a lost
 * confirm on its next cycle. `MIN_RETENTION_MS` (1 day) is far beyond all of those and refuses
 * anything shorter. The unbounded ways (a DLQ replay days later, a producer's relay back after a long
 * outage) may pass the inbox; the consumers' business idempotency keys (unique constraints, never
 * purged) still absorb them (docs/DATABASE.md, "Retention").
 */
export const MIN_RETENTION_MS = 24 * 3_600_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;

export interface PurgeOptions {
  olderThanMs?: number;
  /** Rows per DELETE: short transactions, no long locks on a hot table. */
  batchSize?: number;
  /** Only this consumer's rows. */
  consumer?: string;
  /** Only these consumers' rows (a service purges its own); all consumers when neither is given. */
  consumers?: readonly string[];
  /** Checked between batches: an aborted purge stops and throws the signal's reason. */
  signal?: AbortSignal;
}

/** Refuses a horizon that could let a duplicate through. */
export function assertInboxRetention(olderThanMs: number): void {
  if (!(olderThanMs >= MIN_RETENTION_MS)) {
    throw new RangeError(
      `inbox retention of ${olderThanMs} ms is below the minimum of ${MIN_RETENTION_MS} ms (1 day): duplicates could be processed twice`,
    );
  }
}

/** Deletes inbox rows older than the horizon, in small batches. Returns how many were removed. */
export async function purgeProcessedEvents(pool: Pool, options: PurgeOptions = {}): Promise<number> {
  const olderThanMs = options.olderThanMs ?? DEFAULT_RETENTION_MS;
  assertInboxRetention(olderThanMs);
  const batchSize = options.batchSize ?? 5000;
  const consumers =
    options.consumer !== undefined ? [options.consumer] : options.consumers ? [...options.consumers] : null;
  let total = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM processed_events
       WHERE ctid IN (
         SELECT ctid FROM processed_events
         WHERE processed_at < now() - make_interval(secs => $1::double precision / 1000)
           AND ($3::text[] IS NULL OR consumer = ANY($3::text[]))
         LIMIT $2
       )`,
      [olderThanMs, batchSize, consumers],
    );
    total += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < batchSize) return total;
  }
}

/** How many inbox rows a purge with these options would delete now (a dry run of the purge). */
export async function countPurgeableProcessedEvents(
  pool: Pool,
  options: Pick<PurgeOptions, 'olderThanMs' | 'consumers'> = {},
): Promise<number> {
  const olderThanMs = options.olderThanMs ?? DEFAULT_RETENTION_MS;
  assertInboxRetention(olderThanMs);
  const res = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM processed_events
      WHERE processed_at < now() - make_interval(secs => $1::double precision / 1000)
        AND ($2::text[] IS NULL OR consumer = ANY($2::text[]))`,
    [olderThanMs, options.consumers ? [...options.consumers] : null],
  );
  return res.rows[0].n;
}

export interface InboxRetentionJobOptions {
  /** The job's name, e.g. `inbox-retention:notification-service`: one lock per service. */
  name: string;
  intervalMs: number;
  retentionMs: number;
  /** The inbox consumer names this service owns; another service's rows are its own business. */
  consumers: readonly string[];
  batchSize?: number;
}

/** The scheduled job (@community/db createScheduler) that purges a service's inbox rows. */
export function inboxRetentionJob(options: InboxRetentionJobOptions): ScheduledJob {
  assertInboxRetention(options.retentionMs);
  if (options.consumers.length === 0) throw new RangeError(`${options.name}: no inbox consumers to purge`);
  return {
    name: options.name,
    intervalMs: options.intervalMs,
    run: async ({ pool, signal }) => ({
      deleted: await purgeProcessedEvents(pool, {
        olderThanMs: options.retentionMs,
        consumers: options.consumers,
        batchSize: options.batchSize,
        signal,
      }),
    }),
  };
}
