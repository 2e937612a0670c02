import { buildEvent, type EmailChannel, type EventOf, type NotificationType } from '@community/contracts';
import { SERVICE_NAME } from '../config';

/**
 * What a notification row holds of its notification.created: every field of the event is
 * rebuildable from the row (docs/NOTIFICATIONS.md "Emission"). The same row always gives the same
 * event, id included, whoever builds it: the batch right after its commit, a redelivery of the
 * source event that finds the row already written, or the reconciler's redrive of lost work.
 */
export interface StoredNotification {
  /** The row's id, which is also the event's id: a re-emission is the same message. */
  id: string;
  userId: string;
  type: NotificationType;
  idempotencyKey: string;
  actorId: string | null;
  resourceType: string;
  resourceId: string;
  excerpt: string | null;
  emailChannel: EmailChannel;
  groupKey: string | null;
  /** null: a row from before the column (the event then leaves `push` out, as events before it did). */
  push: boolean | null;
  quietUntil: Date | string | null;
  /** The row's created_at: the event's occurredAt. */
  createdAt: Date | string;
  sourceEventId: string;
  /** The source event's correlation id (null: a row from before the column; the source event id stands in). */
  correlationId: string | null;
}

const iso = (d: Date | string) => (typeof d === 'string' ? new Date(d).toISOString() : d.toISOString());

/** The notification.created of a stored row, validated against the contract (throws if it is not). */
export function notificationCreatedOf(n: StoredNotification): EventOf<'notification.created'> {
  return buildEvent(
    'notification.created',
    {
      notificationId: n.id,
      userId: n.userId,
      type: n.type,
      idempotencyKey: n.idempotencyKey,
      actorId: n.actorId ?? undefined,
      resourceType: n.resourceType,
      resourceId: n.resourceId,
      emailChannel: n.emailChannel,
      excerpt: n.excerpt ?? undefined,
      groupKey: n.groupKey ?? undefined,
      push: n.push ?? undefined,
      quietUntil: n.quietUntil === null ? undefined : iso(n.quietUntil),
    },
    // The source event's correlation id: one id follows a comment from the API to the email.
    {
      producer: SERVICE_NAME,
      id: n.id,
      occurredAt: iso(n.createdAt),
      correlationId: n.correlationId ?? n.sourceEventId,
    },
  );
}
