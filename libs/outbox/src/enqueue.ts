import type { PoolClient } from 'pg';
import sql, { raw, type Sql } from 'sql-template-tag';
import { validateOrThrow, type AnyEvent } from '@community/contracts';
import { traceCarrier } from './trace';

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
  const statement = sql`WITH items AS (
      SELECT *, ${traceCarrier()}::jsonb AS trace_context
      FROM unnest(${aggregateIds}::text[], ${eventIds}::uuid[], ${types}::text[], ${payloads}::jsonb[]) WITH ORDINALITY
        AS r(aggregate_id, event_id, event_type, payload, ord)
    ),
    ${outboxWrite({ from: 'items', producer, traceContext: true })}
    SELECT count(*) FROM outbox_notified`;
  // Named: prepared once per connection (this runs in every producer's hot transaction). The
  // caller's active span (the HTTP request's, a consumer's) is stored: the relay's publish continues it.
  await tx.query({ name: 'outbox-enqueue', text: statement.text, values: statement.values });
}

/**
 * The outbox write as two CTEs (a sql-template-tag fragment carrying its own values), for a
 * producer that writes its state and its events in ONE statement (one round trip instead of two;
 * notification-service's batch does). `enqueueEvents` is built on it too, so there is one
 * definition of how a row is written.
 *
 * - `from` names a relation of the statement (an identifier, not a value) with columns
 *   `aggregate_id text, event_id uuid, event_type text, payload jsonb, ord bigint` (rows get ids,
 *   hence publish order, by `ord`);
 * - `producer`: the producing service's name, also the NOTIFY payload that wakes its relay;
 * - `traceContext: true`: `from` also has a column `trace_context jsonb`, each row's W3C trace
 *   context (libs/outbox `traceCarrier`, NULL when tracing is off), stored for the relay's
 *   publish span (docs/TRACING.md). Without it the rows store NULL.
 *
 * Defines `outbox_inserted` and `outbox_notified`. The statement's final SELECT must read
 * `outbox_notified` (e.g. `(SELECT count(*) FROM outbox_notified)`): a CTE without a data change
 * runs only when read, and it is what wakes the relays (NOTIFY at commit, and only if a row was
 * written). Validating the events against the contract is the caller's job here (buildEvent does).
 */
export function outboxWrite(o: { from: string; producer: string; traceContext?: boolean }): Sql {
  return sql`outbox_inserted AS (
       INSERT INTO outbox_messages (producer, aggregate_id, event_id, event_type, routing_key, payload, trace_context)
       SELECT ${o.producer}::text, s.aggregate_id, s.event_id, s.event_type, s.event_type, s.payload,
              ${raw(o.traceContext ? 's.trace_context' : 'NULL::jsonb')}
       FROM ${raw(o.from)} AS s
       ORDER BY s.ord
       RETURNING 1
     ),
     outbox_notified AS (
       SELECT pg_notify(${OUTBOX_CHANNEL}::text, ${o.producer}::text)
       FROM (SELECT count(*) AS n FROM outbox_inserted) AS c WHERE c.n > 0
     )`;
}
