import { createHash } from 'node:crypto';
import type { NotificationType } from '@community/contracts';

/**
 * How long the push service keeps a push for a browser that is offline (RFC 8030 `TTL`, seconds).
 * A mention or a reply still matters the next day, not the next week (by then the inbox shows it);
 * a follow, a reaction or a comment is stale within hours; a security alert must reach a device
 * that comes back within days (docs/PUSH.md "Topic, TTL, Urgency").
 */
export const TTL_SECONDS: Readonly<Record<NotificationType, number>> = {
  mention: 86_400,
  reply: 86_400,
  comment: 21_600,
  reaction: 21_600,
  follow: 21_600,
  security_alert: 259_200,
};

export type Urgency = 'very-low' | 'low' | 'normal' | 'high';

/**
 * RFC 8030 `Urgency`: a device on battery saving may hold back anything below `high`. A security
 * alert is `high`; what is addressed to the user `normal`; the digest-ish types `low`.
 */
export const URGENCY: Readonly<Record<NotificationType, Urgency>> = {
  mention: 'normal',
  reply: 'normal',
  comment: 'low',
  reaction: 'low',
  follow: 'low',
  security_alert: 'high',
};

/** RFC 8030 allows a topic of at most 32 characters of the URL-safe base64 alphabet. */
export const TOPIC_LENGTH = 32;

/**
 * The push's `Topic`: a function of the notification's idempotency key (sha256, base64url, its first
 * 32 characters: 192 bits). A push service replaces a message it still holds with a newer one of
 * the same topic, so a re-send of the same notification (after a crash in the window between the
 * push service's 201 and our ledger's `sent`) replaces the first copy instead of being shown twice.
 * A grouped notification's topic is its group key's instead (the handler passes it): the next
 * member replaces the previous one still held, as the payload's tag replaces it on the device.
 */
export function topicFor(idempotencyKey: string): string {
  return createHash('sha256').update(idempotencyKey, 'utf8').digest('base64url').slice(0, TOPIC_LENGTH);
}
