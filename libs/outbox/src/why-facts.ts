import type { Pool } from 'pg';

// The outbox's reads for a diagnosis (the reconciler's "why", docs/RECONCILER.md): which events a
// producer wrote, and whether its relay has published them yet. Read only; the writes are
// enqueueEvents, the relay and purgeSentOutbox. A field of the envelope's `data` is named by the
// caller (it is a bound parameter, never spliced), since the contract, not this lib, knows the fields.

/** An outbox row as written: the envelope, and when the relay published it (null: not yet). */
export interface OutboxEvent {
  eventId: string;
  producer: string;
  payload: unknown;
  createdAt: Date;
  sentAt: Date | null;
}

/**
 * Any producer's events with this id, or whose `data[field]` is this value (either may be absent),
 * but none of type `exceptType`: in write order, at most `limit`.
 */
export async function outboxEventsAbout(
  pool: Pick<Pool, 'query'>,
  q: { eventId?: string; data?: { field: string; value: string }; exceptType?: string; limit: number },
): Promise<OutboxEvent[]> {
  const res = await pool.query<{
    event_id: string;
    producer: string;
    payload: unknown;
    created_at: Date;
    sent_at: Date | null;
  }>(
    `SELECT event_id::text, producer, payload, created_at, sent_at FROM outbox_messages
      WHERE ($3::text IS NULL OR event_type <> $3)
        AND (($1::text IS NOT NULL AND event_id::text = $1) OR ($2::text IS NOT NULL AND payload->'data'->>$4::text = $2))
      ORDER BY id LIMIT $5`,
    [q.eventId ?? null, q.data?.value ?? null, q.exceptType ?? null, q.data?.field ?? null, q.limit],
  );
  return res.rows.map((r) => ({
    eventId: r.event_id,
    producer: r.producer,
    payload: r.payload,
    createdAt: r.created_at,
    sentAt: r.sent_at,
  }));
}

/**
 * One producer's events of one type and aggregate whose `data[field]` is one of `values`: each with
 * that value, and when it was published (null: not yet).
 */
export async function outboxEventsWith(
  pool: Pick<Pool, 'query'>,
  q: { producer: string; aggregateId: string; eventType: string; field: string; values: readonly string[] },
): Promise<{ eventId: string; value: string; sentAt: Date | null }[]> {
  const res = await pool.query<{ event_id: string; value: string; sent_at: Date | null }>(
    `SELECT event_id::text, payload->'data'->>$4::text AS value, sent_at FROM outbox_messages
      WHERE producer = $1 AND aggregate_id = $2 AND event_type = $3 AND payload->'data'->>$4::text = ANY($5::text[])`,
    [q.producer, q.aggregateId, q.eventType, q.field, q.values],
  );
  return res.rows.map((r) => ({ eventId: r.event_id, value: r.value, sentAt: r.sent_at }));
}
