import type { Pool, PoolClient } from 'pg';
import { withTransaction } from './transaction';

/**
 * The inbox: one `processed_events` row per (consumer, event id), inserted in the SAME transaction
 * as the consumer's effects. A redelivery of the event finds the row and has no second effect; if
 * the effects roll back, so does the row, and the redelivery does the work.
 *
 * The inbox catches redelivery of the same event id. A *new* event id for the same business fact
 * (a producer retry that built a new envelope) is caught by the business idempotency key's unique
 * constraint in the consumer's own tables — both are needed.
 */

/** True when this call claimed the event (first time); false for a duplicate. */
export async function claimEvent(tx: PoolClient, consumer: string, eventId: string): Promise<boolean> {
  const res = await tx.query({
    name: 'idempotency-claim-event',
    text: 'INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    values: [consumer, eventId],
  });
  return res.rowCount === 1;
}

/** Claims many events in one statement; returns the ids claimed now (the fresh ones). */
export async function claimEvents(tx: PoolClient, consumer: string, eventIds: string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const res = await tx.query<{ event_id: string }>({
    // Named: a prepared statement per connection, so the hot path is not parsed and planned again
    // for every batch (planning costs PostgreSQL more than executing a small batch).
    name: 'idempotency-claim-events',
    text: inboxClaimSql('$1', '$2'),
    values: [consumer, eventIds],
  });
  return new Set(res.rows.map((r) => r.event_id));
}

/**
 * The batch claim as SQL, for a consumer that puts it in a WITH clause of its own first statement
 * so that claiming costs no round trip of its own: `WITH claimed AS (${inboxClaimSql('$1', '$2')})
 * ...`. `consumer` and `eventIds` are parameter placeholders (text, text[]); the CTE yields
 * `event_id` for each id claimed now. The same rules as claimEvents: same transaction as the
 * effects, and only the claimed (fresh) events may have effects.
 */
export function inboxClaimSql(consumer: string, eventIds: string): string {
  // In id order: two batches holding the same ids (a redelivery racing its original) wait for each
  // other on the same key first instead of deadlocking on keys taken in opposite orders.
  return `INSERT INTO processed_events (consumer, event_id)
          SELECT ${consumer}, id FROM unnest(${eventIds}::text[]) AS t(id) ORDER BY id
          ON CONFLICT DO NOTHING
          RETURNING event_id`;
}

export type RunOnceResult<T> = { duplicate: true } | { duplicate: false; result: T };

/** Runs `fn` and records the event in one transaction, unless the event was already processed. */
export async function runOnce<T>(pool: Pool, consumer: string, eventId: string, fn: (tx: PoolClient) => Promise<T>): Promise<RunOnceResult<T>> {
  return withTransaction(pool, async (tx) => {
    if (!(await claimEvent(tx, consumer, eventId))) return { duplicate: true as const };
    return { duplicate: false as const, result: await fn(tx) };
  });
}

export interface BatchOnceResult<I, R> {
  /** Items whose effects were applied by this call. */
  fresh: I[];
  /** Items already processed before, or repeated within the batch. */
  duplicates: I[];
  result: R;
}

/**
 * The batch form: claims every item's event id in one statement, then runs `fn` with only the
 * fresh items, all in one transaction. An event id that appears twice in the same batch (a
 * redelivery that raced its original) counts once.
 */
export async function runBatchOnce<I extends { eventId: string }, R>(
  pool: Pool,
  consumer: string,
  items: I[],
  fn: (tx: PoolClient, fresh: I[]) => Promise<R>,
): Promise<BatchOnceResult<I, R>> {
  return withTransaction(pool, async (tx) => {
    const claimed = await claimEvents(tx, consumer, [...new Set(items.map((i) => i.eventId))]);
    const fresh: I[] = [];
    const duplicates: I[] = [];
    for (const item of items) {
      if (claimed.delete(item.eventId)) fresh.push(item);
      else duplicates.push(item);
    }
    return { fresh, duplicates, result: await fn(tx, fresh) };
  });
}
