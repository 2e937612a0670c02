import type { NotificationType } from '@community/contracts';
import { topicFor } from './delivery';

/**
 * What the service worker receives (decrypted) and shows: small, English, one line each, and
 * serialised so that no character of a user's text can break out of it where a page or a worker
 * were to put it into HTML (docs/PUSH.md "Payload").
 */
export interface PushPayload {
  title: string;
  body: string;
  /** Where a click on the notification leads: the notification on the community site. */
  url: string;
  /** The browser replaces a shown notification with the same tag (a group's next member, a re-send). */
  tag: string;
  notificationId: string;
  type: NotificationType;
}

export interface PushSource {
  notificationId: string;
  type: NotificationType;
  idempotencyKey: string;
  resourceType: string;
  excerpt?: string;
  groupKey?: string;
}

/**
 * A group so far, for the user, from push-service's ledger (store/ledger.ts `decide`): its members
 * (distinct idempotency keys, this one included, withdrawn ones not) and their distinct actors.
 */
export interface GroupSoFar {
  members: number;
  actors: number;
}

/** The types the inbox groups (docs/NOTIFICATIONS.md "Grouping"); a mention, an alert never. */
export const GROUPED_TYPES: ReadonlySet<NotificationType> = new Set(['reaction', 'follow', 'reply', 'comment']);

/** The event's group, for a type that groups; none for one that never does, whatever it carries. */
export function groupOf(source: Pick<PushSource, 'type' | 'groupKey'>): string | undefined {
  return GROUPED_TYPES.has(source.type) ? source.groupKey : undefined;
}

/** Of the body; a notification shows two or three lines of it anyway. */
export const BODY_MAX_LENGTH = 180;

// Control characters, DEL and the Unicode line/paragraph separators: one line, nothing hidden.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f\u2028\u2029]+/g;

/** One line, no control characters, trimmed and bounded. */
export function oneLine(value: string, maxLength: number): string {
  const line = value
    .replace(UNSAFE, ' ')
    .replace(/\s{2,}/g, ' ')
    .trim();
  return line.length > maxLength ? `${line.slice(0, maxLength - 1)}…` : line;
}

const RESOURCE_WORDS: Record<string, string> = { post: 'post', comment: 'comment' };

/**
 * The title: what happened. push-service keeps no projection of users (no names, fewer personal
 * data in one more place), so the actor is "Someone"; the excerpt, in the body, is the content.
 */
export function titleFor(type: NotificationType, resourceType: string): string {
  switch (type) {
    case 'mention':
      return 'Someone mentioned you in a comment';
    case 'reply':
      return 'Someone replied to your comment';
    case 'comment':
      return 'Someone commented on your post';
    case 'reaction':
      return `Someone reacted to your ${RESOURCE_WORDS[resourceType] ?? 'content'}`;
    case 'follow':
      return 'Someone started following you';
    case 'security_alert':
      return 'Security alert on your account';
  }
}

/**
 * The grouped title, when the group has more than one member so far: counts, never names
 * (push-service has no names; docs/PUSH.md "Grouped pushes"). People where the actors are known and
 * more than one ("3 people reacted to your post"), else the members ("2 reactions to your post").
 * Undefined: one member, or a type that never groups; the single title stands.
 */
export function groupedTitleFor(
  type: NotificationType,
  resourceType: string,
  group: GroupSoFar | undefined,
): string | undefined {
  if (!group || group.members < 2) return undefined;
  const { members, actors } = group;
  switch (type) {
    case 'reaction': {
      const target = RESOURCE_WORDS[resourceType] ?? 'content';
      return actors >= 2 ? `${actors} people reacted to your ${target}` : `${members} reactions to your ${target}`;
    }
    case 'follow':
      if (actors >= 2) return `${actors} people followed you`;
      // The same follower twice in a day (unfollowed, followed again) is still one.
      return actors === 1 ? undefined : `${members} new followers`;
    case 'reply':
      return `${members} new replies to your comment`;
    case 'comment':
      return `${members} comments on your post`;
    case 'mention':
    case 'security_alert':
      return undefined;
  }
}

const DEFAULT_BODY: Record<NotificationType, string> = {
  mention: 'Open the community to read it.',
  reply: 'Open the community to read it.',
  comment: 'Open the community to read it.',
  reaction: 'Open the community to see it.',
  follow: 'Open the community to see who.',
  security_alert: 'Check your account activity now.',
};

export function notificationUrl(publicBaseUrl: string, notificationId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/notifications/${encodeURIComponent(notificationId)}`;
}

/**
 * The payload of one notification; `group`, for a member of a group, is the group so far (its
 * count makes the title; the body stays the member's own excerpt, the latest).
 */
export function formatPush(source: PushSource, publicBaseUrl: string, group?: GroupSoFar): PushPayload {
  const excerpt = source.excerpt ? oneLine(source.excerpt, BODY_MAX_LENGTH) : '';
  const groupKey = groupOf(source);
  return {
    title:
      (groupKey ? groupedTitleFor(source.type, source.resourceType, group) : undefined) ??
      titleFor(source.type, source.resourceType),
    body: excerpt || DEFAULT_BODY[source.type],
    url: notificationUrl(publicBaseUrl, source.notificationId),
    // A group's pushes share one tag, so the latest replaces the previous on the device.
    tag: topicFor(groupKey ?? source.idempotencyKey),
    notificationId: source.notificationId,
    type: source.type,
  };
}

/**
 * JSON with `<`, `>`, `&` and U+2028/U+2029 as \u escapes: still the same JSON to any parser, and
 * inert wherever the text ends up (an HTML page, a script).
 */
export function serialisePayload(payload: PushPayload): string {
  return JSON.stringify(payload).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
