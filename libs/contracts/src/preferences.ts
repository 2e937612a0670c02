// What a user can receive and how: notification types, email channels, the default preferences and
// the types no preference can mute. Shared by the producers (notification-service) and email-service.
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

export const EmailChannelSchema = Type.Union([Type.Literal('immediate'), Type.Literal('digest'), Type.Literal('off')]);
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
