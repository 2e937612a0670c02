import { Type, type Static } from '@sinclair/typebox';

/** Kinds of notification a user can receive (the `type` of `notification.created`). */
export const NotificationTypeSchema = Type.Union([
  Type.Literal('mention'),
  Type.Literal('reply'),
  Type.Literal('comment'),
  Type.Literal('reaction'),
  Type.Literal('follow'),
  Type.Literal('security_alert'),
]);
export type NotificationType = Static<typeof NotificationTypeSchema>;
export const NOTIFICATION_TYPES: readonly NotificationType[] = Object.freeze(
  NotificationTypeSchema.anyOf.map((literal) => literal.const),
);

export const EmailChannelSchema = Type.Union([
  Type.Literal('immediate'),
  Type.Literal('digest'),
  Type.Literal('off'),
]);
export type EmailChannel = Static<typeof EmailChannelSchema>;
export const EMAIL_CHANNELS: readonly EmailChannel[] = Object.freeze(EmailChannelSchema.anyOf.map((l) => l.const));

export interface ChannelPreference {
  readonly inApp: boolean;
  readonly email: EmailChannel;
}
export type Preferences = Readonly<Record<NotificationType, ChannelPreference>>;

/**
 * Defaults from the contract: in-app on for every type; email immediate for mention, reply and
 * security alert; daily digest for follow and reaction.
 *
 * `comment` (someone commented on your post) is not fixed by the contract. It is `digest`: an
 * active post draws many comments, one email each is the noisiest stream we could send, and the
 * comments that address the author directly already arrive immediately as `reply` or `mention`.
 */
export const DEFAULT_PREFERENCES: Preferences = Object.freeze({
  mention: Object.freeze({ inApp: true, email: 'immediate' }),
  reply: Object.freeze({ inApp: true, email: 'immediate' }),
  comment: Object.freeze({ inApp: true, email: 'digest' }),
  reaction: Object.freeze({ inApp: true, email: 'digest' }),
  follow: Object.freeze({ inApp: true, email: 'digest' }),
  security_alert: Object.freeze({ inApp: true, email: 'immediate' }),
});

/**
 * Types delivered in-app and by email (immediately) whatever the user's preferences say.
 * The contract requires it of security alerts: a user must not be able to mute an account takeover.
 */
export const PREFERENCE_LOCKED_TYPES: readonly NotificationType[] = Object.freeze(['security_alert']);

/**
 * Keys are `kind:part:part`. Ids are opaque strings and could themselves contain ':', which would
 * make `mention:a:b:c` ambiguous (two different notifications, one key: one silently dropped).
 * So ':' and '%' inside a part are percent-encoded; ids without them, i.e. every uuid or integer
 * id, produce exactly the contract's format.
 */
function part(name: string, value: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`idempotency key part ${name} must be a non-empty string`);
  }
  if (value.indexOf(':') === -1 && value.indexOf('%') === -1) return value;
  return value.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/** `mention:{commentId}:{mentionedUserId}` */
export function mentionKey(commentId: string, mentionedUserId: string): string {
  return `mention:${part('commentId', commentId)}:${part('mentionedUserId', mentionedUserId)}`;
}

/** `reply:{commentId}:{parentAuthorId}` */
export function replyKey(commentId: string, parentAuthorId: string): string {
  return `reply:${part('commentId', commentId)}:${part('parentAuthorId', parentAuthorId)}`;
}

/** `comment:{commentId}:{postAuthorId}` (a comment on the recipient's post) */
export function commentOnPostKey(commentId: string, postAuthorId: string): string {
  return `comment:${part('commentId', commentId)}:${part('postAuthorId', postAuthorId)}`;
}

/** `follow:{followerId}:{followeeId}` */
export function followKey(followerId: string, followeeId: string): string {
  return `follow:${part('followerId', followerId)}:${part('followeeId', followeeId)}`;
}

/** `reaction:{reactionId}` */
export function reactionKey(reactionId: string): string {
  return `reaction:${part('reactionId', reactionId)}`;
}

/** `security:{alertId}` */
export function securityAlertKey(alertId: string): string {
  return `security:${part('alertId', alertId)}`;
}
