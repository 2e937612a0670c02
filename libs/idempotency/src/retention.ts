import type { Pool } from 'pg';

/**
 * Inbox retention. Purging an inbox row reopens the door for that event id, so the horizon must
 * be longer than any way a duplicate can still arrive through the runtime: the whole retry chain
 * (1 s + 5 s + 30 s + 2 min + 10 min ≈ 13 min), redeliveries after crashes, and an outbox relay
 * that re-publishes after a lost confirm. `MIN_RETENTION_MS` (1 day) is far beyond all of those
 * and refuses anything shorter. A message replayed from a DLQ days later may pass the inbox; the
 * consumers' business idempotency keys (unique constraints, never purged) still absorb it.
 */
export const MIN_RETENTION_MS = 24 * 3_600_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000;

export interface PurgeOptions {
  olderThanMs?: number;
  /** Rows per DELETE: short transactions, no long locks on a hot table. */
  batchSize?: number;
  /** Only this consumer's rows; all consumers when omitted. */
  consumer?: string;
}

/** Deletes inbox rows older than the horizon, in small batches. Returns how many were removed. */
export async function purgeProcessedEvents(pool: Pool, options: PurgeOptions = {}): Promise<number> {
  const olderThanMs = options.olderThanMs ?? DEFAULT_RETENTION_MS;
  if (olderThanMs < MIN_RETENTION_MS) {
    throw new RangeError(`inbox retention of ${olderThanMs} ms is below the minimum of ${MIN_RETENTION_MS} ms (1 day): duplicates could be processed twice`);
  }
  const batchSize = options.batchSize ?? 5000;
  let total = 0;
  for (;;) {
    const res = await pool.query(
      `DELETE FROM processed_events
       WHERE ctid IN (
         SELECT ctid FROM processed_events
         WHERE processed_at < now() - make_interval(secs => $1::double precision / 1000)
           AND ($3::text IS NULL OR consumer = $3)
         LIMIT $2
       )`,
      [olderThanMs, batchSize, options.consumer ?? null],
    );
    total += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < batchSize) return total;
  }
}
