// Dead letters as stored and read: ingest, the summary by queue, the groups and the listings.
import type { PoolClient } from 'pg';
import type { DeadLetter } from '../dead-letter';
import { whereOf, type DlqFilter } from '../filter';
import { DEFAULT_RESTORE_WINDOW_MS, MESSAGE_COLUMNS, messageRow, type Db, type MessageRow } from './rows';

/**
 * Ingest of one dead letter: the row (idempotent on message id + dead-letter time, so a copy the
 * broker redelivers after a crash between commit and ack is not stored twice) and its group.
 * Returns whether the row is new and whether its cause was never seen before.
 */
export async function insertDeadLetter(
  tx: PoolClient,
  d: DeadLetter,
): Promise<{ inserted: boolean; newCause: boolean }> {
  const row = await tx.query(
    `INSERT INTO dlq_messages (queue, original_queue, message_id, dead_lettered_at, properties, headers, body, routing_key,
                               message_type, error_class, error_message, error_kind, handler, attempts, fingerprint)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (message_id, dead_lettered_at) DO NOTHING
     RETURNING id`,
    [
      d.queue,
      d.originalQueue,
      d.messageId,
      d.deadLetteredAt,
      d.properties,
      d.headers,
      d.body,
      d.routingKey,
      d.messageType,
      d.errorClass,
      d.errorMessage,
      d.errorKind,
      d.handler,
      d.attempts,
      d.fingerprint,
    ],
  );
  if (row.rowCount === 0) return { inserted: false, newCause: false };
  const group = await tx.query<{ created: boolean }>(
    `INSERT INTO dlq_groups (fingerprint, error_class, normalized, handler, message_type, sample_message, first_seen, last_seen, total)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, 1)
     ON CONFLICT (fingerprint) DO UPDATE SET
       total = dlq_groups.total + 1,
       first_seen = LEAST(dlq_groups.first_seen, EXCLUDED.first_seen),
       last_seen = GREATEST(dlq_groups.last_seen, EXCLUDED.last_seen)
     RETURNING (xmax = 0) AS created`,
    [d.fingerprint, d.errorClass, d.normalized, d.handler, d.messageType, d.errorMessage, d.deadLetteredAt],
  );
  return { inserted: true, newCause: group.rows[0].created };
}

export interface QueueSummary {
  queue: string;
  originalQueue: string;
  pending: number;
  oldestDeadLetteredAt: string | null;
  oldestAgeSeconds: number | null;
  lastDeadLetteredAt: string | null;
  groups: number;
}

export async function summaryByQueue(db: Db): Promise<Array<Omit<QueueSummary, 'originalQueue'>>> {
  const { rows } = await db.query(
    `SELECT queue, count(*)::int AS pending, min(dead_lettered_at) AS oldest, max(dead_lettered_at) AS last,
            count(DISTINCT fingerprint)::int AS groups,
            extract(epoch FROM now() - min(dead_lettered_at))::float8 AS oldest_age
       FROM dlq_messages WHERE state = 'pending' GROUP BY queue`,
  );
  return rows.map((r) => ({
    queue: r.queue,
    pending: r.pending,
    oldestDeadLetteredAt: r.oldest ? new Date(r.oldest).toISOString() : null,
    oldestAgeSeconds: r.oldest_age === null ? null : Math.max(0, Math.round(r.oldest_age)),
    lastDeadLetteredAt: r.last ? new Date(r.last).toISOString() : null,
    groups: r.groups,
  }));
}

export interface GroupRow {
  fingerprint: string;
  errorClass: string;
  normalized: string;
  handler: string | null;
  messageType: string | null;
  sampleMessage: string;
  firstSeen: string;
  lastSeen: string;
  total: number;
  /** Messages of this group matching the filter (pending by default), by DLQ. */
  count: number;
  queues: string[];
}

/** Groups with at least one message matching the filter, biggest first. */
export async function listGroups(db: Db, filter: DlqFilter, limit = 100): Promise<GroupRow[]> {
  const w = whereOf(filter);
  const { rows } = await db.query(
    `SELECT g.fingerprint, g.error_class, g.normalized, g.handler, g.message_type, g.sample_message, g.first_seen, g.last_seen, g.total,
            s.count, s.queues
       FROM (SELECT m.fingerprint, count(*)::int AS count, array_agg(DISTINCT m.queue) AS queues
               FROM dlq_messages m WHERE ${w.sql} GROUP BY m.fingerprint) s
       JOIN dlq_groups g USING (fingerprint)
      ORDER BY s.count DESC, g.last_seen DESC
      LIMIT ${Math.min(Math.max(1, limit), 500)}`,
    w.params,
  );
  return rows.map((r) => ({
    fingerprint: r.fingerprint,
    errorClass: r.error_class,
    normalized: r.normalized,
    handler: r.handler,
    messageType: r.message_type,
    sampleMessage: r.sample_message,
    firstSeen: new Date(r.first_seen).toISOString(),
    lastSeen: new Date(r.last_seen).toISOString(),
    total: r.total,
    count: r.count,
    queues: r.queues,
  }));
}

/**
 * A page of the filtered list, newest first; `cursor` is the last id of the previous page.
 * `total` counts every match and `asOf` is the highest matching id: a bulk action sent with the
 * same filter and this `asOf` acts on exactly these `total` messages.
 */
export async function listMessages(
  db: Db,
  filter: DlqFilter,
  page: { limit: number; cursor?: string },
): Promise<{ items: MessageRow[]; total: number; asOf: string | null; nextCursor: string | null }> {
  const w = whereOf(filter);
  const head = await db.query<{ total: number; max: string | null }>(
    `SELECT count(*)::int AS total, max(m.id)::text AS max FROM dlq_messages m WHERE ${w.sql}`,
    w.params,
  );
  const params = [...w.params];
  let cond = w.sql;
  if (page.cursor) {
    params.push(page.cursor);
    cond += ` AND m.id < $${params.length}::bigint`;
  }
  params.push(page.limit);
  const { rows } = await db.query(
    `SELECT ${MESSAGE_COLUMNS} FROM dlq_messages m WHERE ${cond} ORDER BY m.id DESC LIMIT $${params.length}`,
    params,
  );
  const items = rows.map(messageRow);
  return {
    items,
    total: head.rows[0].total,
    asOf: filter.asOf ?? head.rows[0].max,
    nextCursor: items.length === page.limit ? items[items.length - 1].id : null,
  };
}

export interface MessageDetail extends MessageRow {
  /** Of a discarded message: who discarded it and when (its last discard), and until when a restore can undo it. */
  discardedBy?: string;
  discardedAt?: string;
  restorableUntil?: string;
  properties: Record<string, unknown>;
  headers: Record<string, unknown>;
  /** The body as text (UTF-8), and parsed when it is JSON. */
  body: string;
  bodyJson: unknown;
  history: Array<{
    operationId: string;
    action: string;
    requestedBy: string;
    result: string;
    detail: string | null;
    at: string | null;
  }>;
}

export async function getMessage(
  db: Db,
  id: string,
  restoreWindowMs: number = DEFAULT_RESTORE_WINDOW_MS,
): Promise<MessageDetail | null> {
  const { rows } = await db.query(
    `SELECT ${MESSAGE_COLUMNS}, m.properties, m.headers, m.body FROM dlq_messages m WHERE m.id = $1::bigint`,
    [id],
  );
  if (rows.length === 0) return null;
  const r = rows[0];
  const body = (r.body as Buffer).toString('utf8');
  let bodyJson: unknown = null;
  try {
    bodyJson = JSON.parse(body);
  } catch {
    bodyJson = null;
  }
  const history = await db.query(
    `SELECT o.id::text AS operation_id, o.action, o.requested_by, i.result, i.detail, i.at
       FROM dlq_operation_items i JOIN dlq_operations o ON o.id = i.operation_id
      WHERE i.message_id = $1::bigint ORDER BY o.id`,
    [id],
  );
  const row = messageRow(r);
  const discard = history.rows.filter((h) => h.action === 'discard' && h.result === 'discarded').at(-1);
  const discarded =
    row.state === 'discarded' && discard
      ? {
          discardedBy: discard.requested_by as string,
          discardedAt: new Date(discard.at).toISOString(),
          restorableUntil: new Date(new Date(row.actedAt ?? discard.at).getTime() + restoreWindowMs).toISOString(),
        }
      : {};
  return {
    ...row,
    ...discarded,
    properties: r.properties,
    headers: r.headers,
    body,
    bodyJson,
    history: history.rows.map((h) => ({
      operationId: h.operation_id,
      action: h.action,
      requestedBy: h.requested_by,
      result: h.result,
      detail: h.detail,
      at: h.at ? new Date(h.at).toISOString() : null,
    })),
  };
}
