import type { Pool, PoolClient } from 'pg';
import sql, { raw } from 'sql-template-tag';
import type { StoredNotification } from '../domain/notification-created';

/**
 * Reading back what a notification row holds of its notification.created (domain/notification-created.ts):
 * for a redelivered source event (the batch re-emits what its first delivery wrote) and for the
 * reconciler's redrive of lost work. The column list is the one place that maps the row to the event.
 */
export const STORED_NOTIFICATION_COLUMNS = raw(
  `n.id, n.user_id, n.type, n.idempotency_key, n.actor_id, n.resource_type, n.resource_id, n.excerpt,
   n.email_channel, n.group_key, n.push, n.quiet_until, n.created_at, n.source_event_id, n.correlation_id`,
);

export interface StoredNotificationRow {
  id: string;
  user_id: string;
  type: StoredNotification['type'];
  idempotency_key: string;
  actor_id: string | null;
  resource_type: string;
  resource_id: string;
  excerpt: string | null;
  email_channel: StoredNotification['emailChannel'];
  group_key: string | null;
  push: boolean | null;
  quiet_until: Date | null;
  created_at: Date;
  source_event_id: string;
  correlation_id: string | null;
}

export function storedNotificationOf(r: StoredNotificationRow): StoredNotification {
  return {
    id: r.id,
    userId: r.user_id,
    type: r.type,
    idempotencyKey: r.idempotency_key,
    actorId: r.actor_id,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    excerpt: r.excerpt,
    emailChannel: r.email_channel,
    groupKey: r.group_key,
    push: r.push,
    quietUntil: r.quiet_until,
    createdAt: r.created_at,
    sourceEventId: r.source_event_id,
    correlationId: r.correlation_id,
  };
}

/**
 * The rows that these source events wrote and that still stand as they wrote them: looked up by the
 * slot keys their plans name (the unique index; no index on source_event_id is needed for it), kept
 * only where the row is still the event's own (a higher rank that replaced it announces itself)
 * and not withdrawn (its source was deleted since: nothing to announce).
 */
export async function writtenBy(
  db: Pick<PoolClient | Pool, 'query'>,
  sourceEventIds: readonly string[],
  slotKeys: readonly string[],
): Promise<StoredNotification[]> {
  if (sourceEventIds.length === 0 || slotKeys.length === 0) return [];
  const q = sql`SELECT ${STORED_NOTIFICATION_COLUMNS} FROM notification_items n
    WHERE n.slot_key = ANY (${[...new Set(slotKeys)]}::text[]) AND n.source_event_id = ANY (${[...new Set(sourceEventIds)]}::text[])
      AND n.withdrawn_at IS NULL
    ORDER BY n.created_version, n.id`;
  const { rows } = await db.query<StoredNotificationRow>(q.text, q.values);
  return rows.map(storedNotificationOf);
}

/** Binds a value as a parameter of the statement being built and returns its placeholder (`$n`). */
export type BindParam = (value: unknown) => string;

/** The SQL expressions of one notification row, for the predicates a caller adds to `createdNotificationsSql`. */
export interface CreatedNotificationRef {
  /** The row's id as text: its notification.created's event id, the message id consumers deduplicate on. */
  eventId: string;
  /**
   * The event's identifying data as jsonb, shaped as the envelope is (`payload->'data'->>'userId'`,
   * `type`, `idempotencyKey`, `emailChannel`, `notificationId`, `actorId`, `resourceType`,
   * `resourceId`, `groupKey`), for predicates written over envelopes. Not the envelope as published:
   * that is `notificationCreatedOf(storedNotificationOf(row))`.
   */
  payload: string;
}

/**
 * A SELECT of the notification rows created in [since, until) that still announce a
 * notification.created (not withdrawn: a withdrawn row's source was deleted, nothing to announce),
 * narrowed by the caller's predicates over each row (`and`): "no consumer has a record of it yet",
 * written by whoever owns that record. Columns: `at` (created_at: the event's occurredAt; the batch
 * emits it right after its commit, or re-emits it when its source event is redelivered) and
 * STORED_NOTIFICATION_COLUMNS (a `StoredNotificationRow`, for `storedNotificationOf`).
 */
export function createdNotificationsSql(
  bind: BindParam,
  w: { since: Date; until: Date },
  and: (row: CreatedNotificationRef) => readonly string[] = () => [],
): string {
  const row: CreatedNotificationRef = {
    eventId: 'n.id::text',
    payload: `jsonb_build_object('data', jsonb_build_object('notificationId', n.id::text, 'userId', n.user_id, 'type', n.type,
       'idempotencyKey', n.idempotency_key, 'emailChannel', n.email_channel, 'actorId', n.actor_id,
       'resourceType', n.resource_type, 'resourceId', n.resource_id, 'groupKey', n.group_key))`,
  };
  const where = [
    `n.withdrawn_at IS NULL AND n.created_at >= ${bind(w.since)} AND n.created_at < ${bind(w.until)}`,
    ...and(row),
  ];
  return `SELECT n.created_at AS at, ${STORED_NOTIFICATION_COLUMNS.text} FROM notification_items n WHERE ${where.join(' AND ')}`;
}

/**
 * A LEFT JOIN LATERAL that finds, for each row of the caller's query, the notification row of this
 * user and idempotency key (SQL expressions of the caller's row; the key is unique), if it still
 * announces a notification.created (not withdrawn). It yields `<alias>.*`: STORED_NOTIFICATION_COLUMNS
 * (a `StoredNotificationRow`), all NULL when there is no such row (withdrawn, erased, or replaced by
 * a higher rank under another key).
 */
export function createdNotificationLookupSql(o: { alias: string; userId: string; idempotencyKey: string }): string {
  return `LEFT JOIN LATERAL (SELECT ${STORED_NOTIFICATION_COLUMNS.text} FROM notification_items n
                              WHERE n.idempotency_key = ${o.idempotencyKey} AND n.user_id = ${o.userId}
                                AND n.withdrawn_at IS NULL LIMIT 1) ${o.alias} ON true`;
}
