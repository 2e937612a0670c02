import { planNotifications, type AnyEvent } from '@community/contracts';

/**
 * The batch lane of an event (CONSUMER_PARTITION_BY_USER, docs/NOTIFICATIONS.md "Batches and
 * locks"): its first recipient, whose counter row its batch locks. A comment with two recipients
 * (post author and parent author) is in the first one's lane, so it may still meet a batch of the
 * other; so may a batch of the other queue's consumer. An event that notifies nobody (a self-action,
 * a user.upserted, a retraction) goes by its own subject or id: it locks no counter row in the
 * batch statement.
 */
export function recipientKey(event: AnyEvent): string {
  const first = planNotifications(event)?.[0]?.userId;
  if (first !== undefined) return first;
  return event.type === 'user.upserted' ? event.data.userId : event.id;
}
