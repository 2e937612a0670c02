// The pure rules that decide who is notified of an event and through which channels: used by
// notification-service when it ingests, and by the reconciler when it explains a decision
// ("why didn't X get Y?") — one implementation, so the explanation cannot drift from the decision.

import {
  commentOnPostKey,
  compositeKey,
  followKey,
  mentionKey,
  reactionKey,
  replyKey,
  securityAlertKey,
} from './idempotency-keys';
import {
  DEFAULT_PREFERENCES,
  EMAIL_CHANNELS,
  NOTIFICATION_TYPES,
  PREFERENCE_LOCKED_TYPES,
  type ChannelPreference,
  type EmailChannel,
  type NotificationType,
} from './preferences';
import { EXCERPT_MAX_LENGTH, type AnyEvent } from './events';

/** A notification an event asks for, before preferences and deduplication. */
export interface PlannedNotification {
  userId: string;
  type: NotificationType;
  idempotencyKey: string;
  /** At most one notification per slot (unique); see SLOT_RANK. */
  slotKey: string;
  slotRank: number;
  actorId?: string;
  resourceType: string;
  resourceId: string;
  excerpt?: string;
  /**
   * What can withdraw it (docs/NOTIFICATIONS.md "Retraction"): `comment:{id}`, `post:{id}`,
   * `reaction:{id}` and `user:{actorId}` (the actor's account deletion). A retraction of any of
   * them withdraws the notification, whichever arrives first.
   */
  subjects: string[];
  /**
   * Notifications of one group collapse into one inbox item (docs/NOTIFICATIONS.md "Grouping"):
   * one type, one resource, one GROUP_WINDOW_MS bucket of the event's own occurredAt (so the group
   * does not depend on arrival order). Undefined: never grouped (mentions, security alerts).
   */
  groupKey?: string;
  /** The source event's occurredAt: orders a group's members (latest actors), whatever the arrival order. */
  occurredAt: string;
}

/**
 * Group window: fixed buckets of the member's own occurredAt (UTC days), so the same set of events
 * gives the same groups in any arrival order. A longer-running burst splits at midnight UTC, which
 * is also where a reader expects "today" to end.
 */
export const GROUP_WINDOW_MS = 86_400_000;

/** `{kind}:{part}:…:{bucket}`: the group of a notification, with the contract's key escaping. */
export function groupKey(kind: string, parts: Readonly<Record<string, string>>, occurredAt: string): string {
  const bucket = Math.floor(Date.parse(occurredAt) / GROUP_WINDOW_MS);
  return compositeKey(kind, { ...parts, bucket: String(Number.isFinite(bucket) ? bucket : 0) });
}

/** The subject a retraction names: `kind:{id}` with the contract's key escaping. */
export function retractionSubject(kind: 'comment' | 'post' | 'reaction' | 'user', id: string): string {
  return compositeKey(kind, { id });
}

/** The subject a retraction event withdraws, or undefined for any other event. */
export function retractedSubjectOf(event: AnyEvent): string | undefined {
  switch (event.type) {
    case 'comment.deleted':
      return retractionSubject('comment', event.data.commentId);
    case 'post.deleted':
      return retractionSubject('post', event.data.postId);
    case 'reaction.removed':
      return retractionSubject('reaction', event.data.reactionId);
    default:
      return undefined;
  }
}

/** A comment's notifications go with the comment, its post, or the account of its author. */
function commentSubjects(commentId: string, postId: string, actorId: string): string[] {
  return [
    retractionSubject('comment', commentId),
    retractionSubject('post', postId),
    retractionSubject('user', actorId),
  ];
}

/**
 * One comment can address the same person several ways: it mentions them (user.mentioned, critical
 * queue), replies to their comment and sits under their post (comment.created, standard queue).
 * They get ONE notification for it: all three share the slot `thread:{commentId}:{userId}` and the
 * highest rank wins. The insert keeps the higher rank whichever event arrives first (a later
 * mention replaces an existing reply with exactly the row it would have inserted first, channels,
 * read state and notification.created included; a later reply finds a mention and does nothing),
 * so the outcome does not depend on the order the two queues deliver in (store/ingest.ts).
 */
export const SLOT_RANK: Readonly<Record<NotificationType, number>> = {
  mention: 3,
  reply: 2,
  comment: 1,
  reaction: 0,
  follow: 0,
  security_alert: 0,
};

/** `thread:{commentId}:{userId}`, escaped by the contract's key rule so ids containing ':' cannot collide. */
export function threadSlot(commentId: string, userId: string): string {
  return compositeKey('thread', { commentId, userId });
}

function truncate(text: string): string {
  return text.length > EXCERPT_MAX_LENGTH ? `${text.slice(0, EXCERPT_MAX_LENGTH - 1)}…` : text;
}

/**
 * The notifications an event asks for (pure; no I/O). Nobody is notified of their own action, so
 * self-mentions, replies to oneself, comments on one's own post, reactions to one's own content and
 * self-follows plan nothing. Returns undefined for event types that never notify.
 */
export function planNotifications(event: AnyEvent): PlannedNotification[] | undefined {
  switch (event.type) {
    case 'user.mentioned': {
      const d = event.data;
      if (d.mentionedUserId === d.actorId) return [];
      return [
        {
          userId: d.mentionedUserId,
          type: 'mention',
          idempotencyKey: mentionKey(d.commentId, d.mentionedUserId),
          slotKey: threadSlot(d.commentId, d.mentionedUserId),
          slotRank: SLOT_RANK.mention,
          actorId: d.actorId,
          resourceType: 'comment',
          resourceId: d.commentId,
          excerpt: d.excerpt,
          subjects: commentSubjects(d.commentId, d.postId, d.actorId),
          // Never grouped: a mention is addressed to one person.
          occurredAt: event.occurredAt,
        },
      ];
    }
    case 'comment.created': {
      const d = event.data;
      const out: PlannedNotification[] = [];
      const common = {
        actorId: d.authorId,
        resourceType: 'comment',
        resourceId: d.commentId,
        excerpt: d.excerpt,
        subjects: commentSubjects(d.commentId, d.postId, d.authorId),
        occurredAt: event.occurredAt,
      };
      const repliedTo =
        d.parentCommentId !== undefined && d.parentAuthorId !== undefined ? d.parentAuthorId : undefined;
      if (repliedTo !== undefined && repliedTo !== d.authorId) {
        out.push({
          ...common,
          userId: repliedTo,
          type: 'reply',
          idempotencyKey: replyKey(d.commentId, repliedTo),
          slotKey: threadSlot(d.commentId, repliedTo),
          slotRank: SLOT_RANK.reply,
          // "Ana and 2 others replied to your comment": the replies to one comment.
          groupKey: groupKey('reply', { parentCommentId: d.parentCommentId as string }, event.occurredAt),
        });
      }
      // The post's author replied to is already covered by the reply (same slot, higher rank).
      if (d.postAuthorId !== d.authorId && d.postAuthorId !== repliedTo) {
        out.push({
          ...common,
          userId: d.postAuthorId,
          type: 'comment',
          idempotencyKey: commentOnPostKey(d.commentId, d.postAuthorId),
          slotKey: threadSlot(d.commentId, d.postAuthorId),
          slotRank: SLOT_RANK.comment,
          // "Ana and 2 others commented on your post".
          groupKey: groupKey('comment', { postId: d.postId }, event.occurredAt),
        });
      }
      return out;
    }
    case 'reaction.added': {
      const d = event.data;
      if (d.targetAuthorId === d.actorId) return [];
      const key = reactionKey(d.reactionId);
      return [
        {
          userId: d.targetAuthorId,
          type: 'reaction',
          idempotencyKey: key,
          slotKey: key,
          slotRank: SLOT_RANK.reaction,
          actorId: d.actorId,
          resourceType: d.targetType,
          resourceId: d.targetId,
          excerpt: d.emoji,
          subjects: [
            retractionSubject('reaction', d.reactionId),
            retractionSubject(d.targetType, d.targetId),
            ...(d.targetType === 'comment' && d.postId !== undefined ? [retractionSubject('post', d.postId)] : []),
            retractionSubject('user', d.actorId),
          ],
          // "Ana and 3 others reacted to your post": the reactions on one post or comment.
          groupKey: groupKey('reaction', { targetType: d.targetType, targetId: d.targetId }, event.occurredAt),
          occurredAt: event.occurredAt,
        },
      ];
    }
    case 'user.followed': {
      const d = event.data;
      if (d.followerId === d.followeeId) return [];
      // Keyed on the pair, not the event: unfollow + follow again does not notify a second time.
      const key = followKey(d.followerId, d.followeeId);
      return [
        {
          userId: d.followeeId,
          type: 'follow',
          idempotencyKey: key,
          slotKey: key,
          slotRank: SLOT_RANK.follow,
          actorId: d.followerId,
          resourceType: 'user',
          resourceId: d.followerId,
          subjects: [retractionSubject('user', d.followerId)],
          // "Ana and 3 others followed you".
          groupKey: groupKey('follow', {}, event.occurredAt),
          occurredAt: event.occurredAt,
        },
      ];
    }
    case 'security.alert': {
      const d = event.data;
      const key = securityAlertKey(d.alertId);
      return [
        {
          userId: d.userId,
          type: 'security_alert',
          idempotencyKey: key,
          slotKey: key,
          slotRank: SLOT_RANK.security_alert,
          resourceType: 'security_alert',
          resourceId: d.alertId,
          excerpt: truncate(d.detail ? `${d.kind}: ${d.detail}` : d.kind),
          // Never withdrawn: a security alert is about the account itself. Never grouped either.
          subjects: [],
          occurredAt: event.occurredAt,
        },
      ];
    }
    default:
      return undefined;
  }
}

/**
 * Keeps one planned notification per slot: the highest rank, and on a tie the first. A batch may
 * carry the same fact twice (a producer retry with a new event id), and one INSERT ... ON CONFLICT
 * DO UPDATE must not touch the same row twice.
 */
export function onePerSlot<T extends { slotKey: string; slotRank: number }>(items: T[]): T[] {
  const best = new Map<string, T>();
  for (const item of items) {
    const seen = best.get(item.slotKey);
    if (!seen || item.slotRank > seen.slotRank) best.set(item.slotKey, item);
  }
  return [...best.values()];
}

const isType = (t: string): t is NotificationType => (NOTIFICATION_TYPES as readonly string[]).includes(t);
const isLocked = (t: NotificationType) => PREFERENCE_LOCKED_TYPES.includes(t);

export type PreferenceMap = Record<NotificationType, ChannelPreference>;
export interface StoredPreference {
  type: string;
  inApp: boolean;
  email: string;
}

/** Defaults overlaid with the user's stored choices; locked types always keep their defaults. */
export function effectivePreferences(stored: readonly StoredPreference[]): PreferenceMap {
  const out = Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, { ...DEFAULT_PREFERENCES[t] }])) as PreferenceMap;
  for (const row of stored) {
    if (!isType(row.type) || isLocked(row.type)) continue;
    out[row.type] = {
      inApp: row.inApp,
      email: (EMAIL_CHANNELS as readonly string[]).includes(row.email)
        ? (row.email as EmailChannel)
        : DEFAULT_PREFERENCES[row.type].email,
    };
  }
  return out;
}

/**
 * What a notification of `type` does for a user with these preferences. Security alerts ignore
 * them (the contract: always in-app and immediate email).
 */
export function deliveryFor(prefs: PreferenceMap, type: NotificationType): ChannelPreference {
  return isLocked(type) ? DEFAULT_PREFERENCES[type] : prefs[type];
}
