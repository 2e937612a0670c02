import type { Pool } from 'pg';

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

/** A notification.created of one of the user's notifications, as its row records it. */
export interface CreatedFact {
  /** The event id, which is the row's id (domain/notification-created.ts). */
  eventId: string;
  idempotencyKey: string;
  /**
   * The row's created_at, the event's occurredAt. There is no published-at: the batch emits the
   * event right after its commit (and acks its source only after the broker's confirms), and a
   * redelivered source event re-emits it from the row. So the row's existence means notification-service
   * emitted it, or will once the source event is redelivered.
   */
  createdAt: Date;
  /** Withdrawn since (its source was deleted, or the user erased): not re-emitted any more. */
  withdrawnAt: Date | null;
}

/**
 * The notification.created of the user's notifications with these keys, from the rows themselves
 * (each row is the record of its event since the emission went direct: docs/NOTIFICATIONS.md
 * "Emission"). A key whose row a higher rank replaced is no longer found: the row now announces the
 * replacement, under its own key.
 */
export async function notificationsCreated(
  pool: Pick<Pool, 'query'>,
  userId: string,
  idempotencyKeys: readonly string[],
): Promise<CreatedFact[]> {
  if (idempotencyKeys.length === 0) return [];
  const res = await pool.query<{ id: string; idempotency_key: string; created_at: Date; withdrawn_at: Date | null }>(
    `SELECT id::text, idempotency_key, created_at, withdrawn_at FROM notification_items
      WHERE user_id = $1 AND idempotency_key = ANY($2::text[]) ORDER BY created_at, id`,
    [userId, [...idempotencyKeys]],
  );
  return res.rows.map((r) => ({
    eventId: r.id,
    idempotencyKey: r.idempotency_key,
    createdAt: r.created_at,
    withdrawnAt: r.withdrawn_at,
  }));
}
