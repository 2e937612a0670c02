import type { PoolClient } from 'pg';
import { validateOrThrow, type AnyEvent } from '@community/contracts';

/** The LISTEN/NOTIFY channel; the payload is the producer, so each relay wakes only for its own rows. */
export const OUTBOX_CHANNEL = 'outbox';

export interface OutboxItem {
  event: AnyEvent;
  /**
   * The ordering key: rows of one aggregate are published one after the other, in the order they were
   * enqueued. Use the entity whose consumers depend on order (for notifications: the recipient user).
   */
  aggregateId: string;
}

/**
 * Writes events into the outbox inside the caller's transaction: they are published if and only if
 * the transaction commits. Every event is validated against the contract first, so a producer bug
 * fails the producer's own transaction instead of reaching consumers as a dead letter.
 *
 * One multi-row INSERT (unnest, in the given order, so ids follow it) plus `pg_notify`, which
 * PostgreSQL delivers at commit and drops on rollback: the relay wakes exactly when there is
 * something committed to publish.
 */
export async function enqueueEvents(tx: PoolClient, producer: string, items: OutboxItem[]): Promise<void> {
  if (items.length === 0) return;
  const aggregateIds: string[] = [];
  const eventIds: string[] = [];
  const types: string[] = [];
  const payloads: string[] = [];
  for (const { event, aggregateId } of items) {
    validateOrThrow(event);
    if (!aggregateId) throw new TypeError(`outbox: event ${event.id} (${event.type}) has no aggregateId`);
    aggregateIds.push(aggregateId);
    eventIds.push(event.id);
    types.push(event.type);
    payloads.push(JSON.stringify(event));
  }
  await tx.query({
    // Named: prepared once per connection (this runs in every producer's hot transaction).
    name: 'outbox-enqueue',
    text: `WITH inserted AS (
       INSERT INTO outbox_messages (producer, aggregate_id, event_id, event_type, routing_key, payload)
       SELECT $1, r.aggregate_id, r.event_id, r.event_type, r.event_type, r.payload
       FROM unnest($2::text[], $3::uuid[], $4::text[], $5::jsonb[]) WITH ORDINALITY
            AS r(aggregate_id, event_id, event_type, payload, ord)
       ORDER BY r.ord
       RETURNING 1
     )
     SELECT pg_notify($6, $1) FROM (SELECT count(*) FROM inserted) AS done`,
    values: [producer, aggregateIds, eventIds, types, payloads, OUTBOX_CHANNEL],
  });
}
