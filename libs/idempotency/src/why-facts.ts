import type { Pool } from 'pg';

/** One inbox row: `consumer` handled `eventId` at `processedAt` (its effects committed with it). */
export interface ProcessedEvent {
  consumer: string;
  eventId: string;
  processedAt: Date;
}

/**
 * Which consumers have handled these event ids, oldest first: the inbox's read for a diagnosis (the
 * reconciler's "why", docs/RECONCILER.md). Read only; the inbox's own writes are `inboxClaim`.
 */
export async function processedEventsOf(
  pool: Pick<Pool, 'query'>,
  eventIds: readonly string[],
): Promise<ProcessedEvent[]> {
  const res = await pool.query<{ consumer: string; event_id: string; processed_at: Date }>(
    'SELECT consumer, event_id, processed_at FROM processed_events WHERE event_id = ANY($1::text[]) ORDER BY processed_at',
    [eventIds],
  );
  return res.rows.map((r) => ({ consumer: r.consumer, eventId: r.event_id, processedAt: r.processed_at }));
}
