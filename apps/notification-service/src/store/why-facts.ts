import type { Pool } from 'pg';
import { outboxEventsWith } from '@community/outbox';
import { SERVICE_NAME } from '../config';

// What this service holds about one user's notifications, for a diagnosis: the reconciler's "why"
// (docs/RECONCILER.md) composes these reads, exported from the public entry, with the other owners'.
// Read only. The user's stored preferences are `storedPreferences` (store/preferences.ts).
export { storedPreferences } from './preferences';

/** A notification row as it was decided (its channels) and read. */
export interface NotificationFact {
  id: string;
  type: string;
  idempotencyKey: string;
  inApp: boolean;
  /** 'off', 'immediate' or 'digest': what the email step was asked to do. */
  emailChannel: string;
  sourceEventId: string;
  createdAt: Date;
  readAt: Date | null;
}

/**
 * The user's notifications of these source events, with this idempotency key, or about this comment
 * (any of the three may match).
 */
export async function notificationsAbout(
  pool: Pick<Pool, 'query'>,
  q: { userId: string; sourceEventIds: readonly string[]; idempotencyKey?: string; commentId?: string },
): Promise<NotificationFact[]> {
  const res = await pool.query<{
    id: string;
    type: string;
    idempotency_key: string;
    in_app: boolean;
    email_channel: string;
    source_event_id: string;
    created_at: Date;
    read_at: Date | null;
  }>(
    `SELECT id::text, type, idempotency_key, in_app, email_channel, source_event_id, created_at, read_at FROM notification_items
      WHERE user_id = $1 AND ((source_event_id = ANY($2::text[])) OR idempotency_key = $3 OR (resource_type = 'comment' AND resource_id = $4))`,
    [q.userId, q.sourceEventIds, q.idempotencyKey ?? null, q.commentId ?? null],
  );
  return res.rows.map((i) => ({
    id: i.id,
    type: i.type,
    idempotencyKey: i.idempotency_key,
    inApp: i.in_app,
    emailChannel: i.email_channel,
    sourceEventId: i.source_event_id,
    createdAt: i.created_at,
    readAt: i.read_at,
  }));
}

/**
 * The notification.created this service wrote for the user's notifications with these keys (its
 * outbox: the aggregate is the user), and when its relay published each (null: not yet).
 */
export async function notificationsCreated(
  pool: Pick<Pool, 'query'>,
  userId: string,
  idempotencyKeys: readonly string[],
): Promise<{ eventId: string; idempotencyKey: string; sentAt: Date | null }[]> {
  const rows = await outboxEventsWith(pool, {
    producer: SERVICE_NAME,
    aggregateId: userId,
    eventType: 'notification.created',
    field: 'idempotencyKey',
    values: idempotencyKeys,
  });
  return rows.map((r) => ({ eventId: r.eventId, idempotencyKey: r.value, sentAt: r.sentAt }));
}
