// What a user can receive and how: notification types, email channels, the default preferences and
// the types no preference can mute. Shared by the producers (notification-service), email-service
// and push-service.
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
  /**
   * Web Push to the user's subscribed browsers (docs/PUSH.md). Optional in this type only: stored
   * rows and notification.created events from before the push channel have none, and mean the
   * type's default (`pushFor`). Every value the services answer or decide carries it.
   */
  readonly push?: boolean;
}
/** A type's channels with every one of them decided (the defaults, what the API answers). */
export type DecidedChannels = Required<ChannelPreference>;
export type Preferences = Readonly<Record<NotificationType, Readonly<DecidedChannels>>>;

/**
 * Defaults from the contract: in-app on for every type; email immediate for mention, reply and
 * security alert; daily digest for follow and reaction.
 *
 * `comment` (someone commented on your post) is not fixed by the contract. It is `digest`: an
 * active post draws many comments, one email each is the noisiest stream we could send, and the
 * comments that address the author directly already arrive immediately as `reply` or `mention`.
 *
 * Push follows the immediate email: on for what is addressed to the user and worth an interruption
 * now (mention, reply, security alert), off for the digest-ish types (follow, reaction, comment),
 * which come in bursts a phone would buzz for one by one (docs/PUSH.md "Which types push").
 */
export const DEFAULT_PREFERENCES: Preferences = Object.freeze({
  mention: Object.freeze({ inApp: true, email: 'immediate', push: true }),
  reply: Object.freeze({ inApp: true, email: 'immediate', push: true }),
  comment: Object.freeze({ inApp: true, email: 'digest', push: false }),
  reaction: Object.freeze({ inApp: true, email: 'digest', push: false }),
  follow: Object.freeze({ inApp: true, email: 'digest', push: false }),
  security_alert: Object.freeze({ inApp: true, email: 'immediate', push: true }),
});

/**
 * Types delivered in-app, by email (immediately) and by push whatever the user's preferences say.
 * The contract requires it of security alerts: a user must not be able to mute an account takeover.
 * Security alerts go by push as well, whatever the preferences say.
 */
export const PREFERENCE_LOCKED_TYPES: readonly NotificationType[] = Object.freeze(['security_alert']);

/**
 * Whether a notification of `type` goes by push, given what was chosen or carried (a stored
 * preference, notification.created's `push`): a locked type always; otherwise the choice, and
 * without one (a row or an event from before the push channel) the type's default.
 */
export function pushFor(type: NotificationType, chosen: boolean | null | undefined): boolean {
  if (PREFERENCE_LOCKED_TYPES.includes(type)) return true;
  return chosen ?? DEFAULT_PREFERENCES[type].push;
}
