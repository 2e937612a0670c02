import type { Pool } from 'pg';

/**
 * What the reconciler's checks read from `outbox_messages` (stuck work, lost work): this lib owns the
 * table, so the SQL that names it is here, and the reconciler calls it or composes it (docs/DATABASE.md
 * "Who owns each table"). Read-only.
 */

/**
 * Binds one value as a parameter of the statement being built and returns its placeholder (`$n`):
 * the statement's builder numbers them, so no fragment chooses a position.
 */
export type BindParam = (value: unknown) => string;

export interface UnsentOutbox {
  /** Rows unsent for longer than `afterMs`. */
  rows: number;
  /** Age in seconds of the oldest unsent row (0: none). */
  lagSeconds: number;
  /** The producers of the rows counted in `rows`. */
  producers: string[];
}

/** The outbox backlog of every producer: rows the relays have not published yet. */
export async function unsentOutbox(pool: Pool, o: { afterMs: number }): Promise<UnsentOutbox> {
  const { rows } = await pool.query<{ unsent: number; lag: number; producers: string[] | null }>(
    `SELECT (SELECT count(*) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond')::int AS unsent,
            coalesce((SELECT EXTRACT(EPOCH FROM now() - min(created_at)) FROM outbox_messages WHERE sent_at IS NULL), 0)::float8 AS lag,
            (SELECT array_agg(DISTINCT producer) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond') AS producers`,
    [o.afterMs],
  );
  return { rows: rows[0].unsent, lagSeconds: rows[0].lag, producers: rows[0].producers ?? [] };
}

/** The SQL expressions of one outbox row, for the predicates a caller adds to `sentEventsSql`. */
export interface OutboxRowRef {
  /** The event id as text (the message id consumers deduplicate on). */
  eventId: string;
  /** The envelope as published (jsonb). */
  payload: string;
}

export interface SentEventsFilter {
  /** Published at or after. */
  since: Date;
  /** Published before. */
  until: Date;
  routingKeys?: readonly string[];
  producer?: string;
  eventType?: string;
}

/**
 * A SELECT of the published outbox rows in a window, with the columns `id` (the event id, text),
 * `at` (sent_at) and `payload`, narrowed by the caller's predicates over each row (`and`): "no
 * consumer has a record of it yet", written by whoever owns that record.
 */
export function sentEventsSql(
  bind: BindParam,
  f: SentEventsFilter,
  and: (row: OutboxRowRef) => readonly string[] = () => [],
): string {
  const row: OutboxRowRef = { eventId: 'o.event_id::text', payload: 'o.payload' };
  const where = [
    `o.sent_at IS NOT NULL AND o.sent_at >= ${bind(f.since)} AND o.sent_at < ${bind(f.until)}`,
    ...(f.routingKeys ? [`o.routing_key = ANY(${bind(f.routingKeys)}::text[])`] : []),
    ...(f.producer !== undefined ? [`o.producer = ${bind(f.producer)}`] : []),
    ...(f.eventType !== undefined ? [`o.event_type = ${bind(f.eventType)}`] : []),
    ...and(row),
  ];
  return `SELECT ${row.eventId} AS id, o.sent_at AS at, o.payload FROM outbox_messages o WHERE ${where.join(' AND ')}`;
}

/**
 * A LEFT JOIN LATERAL that finds, for each row of the caller's query, the first outbox row of
 * `producer`'s `eventType` for `aggregateId` whose envelope's `data.<dataKey>` equals `dataValue`
 * (SQL expressions of the caller's row); it yields `<alias>.event_id` (text) and `<alias>.payload`,
 * NULL when retention removed it.
 */
export function envelopeLookupSql(
  bind: BindParam,
  o: { alias: string; producer: string; eventType: string; aggregateId: string; dataKey: string; dataValue: string },
): string {
  return `LEFT JOIN LATERAL (SELECT x.event_id::text AS event_id, x.payload FROM outbox_messages x
                              WHERE x.producer = ${bind(o.producer)} AND x.event_type = ${bind(o.eventType)} AND x.aggregate_id = ${o.aggregateId}
                                AND x.payload->'data'->>${bind(o.dataKey)} = ${o.dataValue} ORDER BY x.id LIMIT 1) ${o.alias} ON true`;
}
