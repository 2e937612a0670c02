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
