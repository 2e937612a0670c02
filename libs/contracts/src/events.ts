import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox';
import { IdSchema, envelopeSchema } from './envelope';
import { EmailChannelSchema, NotificationTypeSchema } from './preferences';

// `data` schemas of every event type, version 1, field names exactly as in docs/CONTRACT.md.
// Objects keep TypeBox's default (extra properties allowed): see the note in envelope.ts.

/** Excerpts are previews, not content: bounded so one message cannot carry a whole post. */
export const EXCERPT_MAX_LENGTH = 500;
const Excerpt = Type.String({ maxLength: EXCERPT_MAX_LENGTH });

export const UserUpsertedV1 = Type.Object({
  userId: IdSchema,
  email: Type.String({ format: 'email', maxLength: 254 }),
  displayName: Type.String({ minLength: 1, maxLength: 200 }),
  locale: Type.Optional(Type.String({ minLength: 2, maxLength: 35 })),
  /**
   * Optional (a compatible extension): the user's IANA time zone ("Asia/Jakarta"), for digests at
   * the user's local hour and quiet hours (docs/NOTIFICATIONS.md "Delivery timing"). Absent: UTC.
   */
  timezone: Type.Optional(Type.String({ format: 'time-zone', maxLength: 64 })),
});

export const UserMentionedV1 = Type.Object({
  commentId: IdSchema,
  postId: IdSchema,
  actorId: IdSchema,
  mentionedUserId: IdSchema,
  excerpt: Excerpt,
});

export const CommentCreatedV1 = Type.Object({
  commentId: IdSchema,
  postId: IdSchema,
  postAuthorId: IdSchema,
  authorId: IdSchema,
  parentCommentId: Type.Optional(IdSchema),
  parentAuthorId: Type.Optional(IdSchema),
  excerpt: Excerpt,
});

export const ReactionAddedV1 = Type.Object({
  reactionId: IdSchema,
  actorId: IdSchema,
  targetType: Type.Union([Type.Literal('post'), Type.Literal('comment')]),
  targetId: IdSchema,
  targetAuthorId: IdSchema,
  emoji: Type.String({ minLength: 1, maxLength: 64 }),
  /**
   * Optional (a compatible extension): the post a reacted-to comment belongs to, so that deleting
   * the post withdraws the reaction's notification too (post.deleted). A reaction on a post needs
   * none: `targetId` is the post.
   */
  postId: Type.Optional(IdSchema),
});

export const UserFollowedV1 = Type.Object({ followerId: IdSchema, followeeId: IdSchema });
export const UserUnfollowedV1 = Type.Object({ followerId: IdSchema, followeeId: IdSchema });

export const PostPublishedV1 = Type.Object({
  postId: IdSchema,
  authorId: IdSchema,
  title: Type.String({ minLength: 1, maxLength: 300 }),
  excerpt: Excerpt,
});

export const SecurityAlertV1 = Type.Object({
  alertId: IdSchema,
  userId: IdSchema,
  kind: Type.String({ minLength: 1, maxLength: 100 }),
  detail: Type.String({ maxLength: 2000 }),
});

export const NotificationCreatedV1 = Type.Object({
  notificationId: IdSchema,
  userId: IdSchema,
  type: NotificationTypeSchema,
  idempotencyKey: Type.String({ minLength: 1, maxLength: 1024 }),
  actorId: Type.Optional(IdSchema),
  resourceType: Type.String({ minLength: 1, maxLength: 64 }),
  resourceId: IdSchema,
  emailChannel: EmailChannelSchema,
  excerpt: Type.Optional(Excerpt),
  /**
   * Optional (a compatible extension): the inbox group the notification belongs to
   * (docs/NOTIFICATIONS.md "Grouping"), so digests and push show "Ana and 3 others reacted".
   * Absent: never grouped.
   */
  groupKey: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  /**
   * Optional (a compatible extension): whether the notification goes by Web Push, decided from the
   * user's preferences like `emailChannel` (docs/PUSH.md). Absent (a producer from before the push
   * channel): push-service pushes a security alert, and any other type by its default preference.
   */
  push: Type.Optional(Type.Boolean()),
  /**
   * Optional (a compatible extension): the notification was created in the user's quiet hours,
   * which end at this instant; email-service and push-service hold its email and push until then
   * (docs/NOTIFICATIONS.md "Delivery timing"). Never set on a security alert. Absent: no hold.
   */
  quietUntil: Type.Optional(Type.String({ format: 'date-time' })),
});

// Retractions (a compatible extension: new types on new routing keys). Each withdraws what its
// creation caused: the notifications (inbox, unread count, pending email and digest) and the feed
// entries. A retraction that arrives before its creation still wins (docs/NOTIFICATIONS.md
// "Retraction"). The ids are those of the creation events.

/** A comment was deleted: its mention, reply and comment-on-post notifications are withdrawn. */
export const CommentDeletedV1 = Type.Object({ commentId: IdSchema, postId: IdSchema, authorId: IdSchema });

/** A post was deleted, and with it its comments and reactions: everything they caused is withdrawn. */
export const PostDeletedV1 = Type.Object({ postId: IdSchema, authorId: IdSchema });

/** A reaction was taken back: its notification is withdrawn. */
export const ReactionRemovedV1 = Type.Object({
  reactionId: IdSchema,
  actorId: IdSchema,
  targetType: Type.Union([Type.Literal('post'), Type.Literal('comment')]),
  targetId: IdSchema,
});

/**
 * A user deleted their account. The reconciler turns it into an erasure (the same audit row and
 * user.erased as `ops user erase`, with cause `account_deleted`), which also withdraws what the
 * user caused in other users' inboxes and feeds.
 */
export const UserDeletedV1 = Type.Object({ userId: IdSchema });

/**
 * notification-service withdrew a notification (its source was deleted): email-service drops its
 * email if not yet sent and takes it out of a pending digest. Keyed like notification.created.
 */
export const NotificationWithdrawnV1 = Type.Object({
  notificationId: IdSchema,
  userId: IdSchema,
  type: NotificationTypeSchema,
  idempotencyKey: Type.String({ minLength: 1, maxLength: 1024 }),
  /** The retraction's subject, e.g. `comment:c-1` or `user:u-9`. */
  subject: Type.String({ minLength: 1, maxLength: 1024 }),
});

/**
 * An operator erased a user's personal data (`ops user erase`, the reconciler's
 * POST /v1/admin/users/:userId/erasure; docs/RUNBOOK.md "Erasure"). Each consumer erases or
 * anonymises what it holds about `userId` in its own tables. `erasureId` is the reconciler's audit
 * row (user_erasures.id), so a consumer's log line leads back to who asked and when.
 */
export const UserErasedV1 = Type.Object({
  userId: IdSchema,
  erasureId: IdSchema,
  /**
   * Optional (absent = `operator`): `account_deleted` when the erasure follows the user's own
   * user.deleted. Then what the user caused for others (mentions, replies, reactions, follows, feed
   * entries) is withdrawn too, not only anonymised.
   */
  cause: Type.Optional(Type.Union([Type.Literal('operator'), Type.Literal('account_deleted')])),
});

function entry<const V extends number, D extends TObject<TProperties>>(version: V, dataSchema: D) {
  return { version, dataSchema } as const;
}

/** Every event type of the contract with its current version and `data` schema. */
export const EVENT_TYPES = {
  'user.upserted': entry(1, UserUpsertedV1),
  'user.mentioned': entry(1, UserMentionedV1),
  'comment.created': entry(1, CommentCreatedV1),
  'reaction.added': entry(1, ReactionAddedV1),
  'user.followed': entry(1, UserFollowedV1),
  'user.unfollowed': entry(1, UserUnfollowedV1),
  'post.published': entry(1, PostPublishedV1),
  'security.alert': entry(1, SecurityAlertV1),
  'notification.created': entry(1, NotificationCreatedV1),
  'user.erased': entry(1, UserErasedV1),
  'comment.deleted': entry(1, CommentDeletedV1),
  'post.deleted': entry(1, PostDeletedV1),
  'reaction.removed': entry(1, ReactionRemovedV1),
  'user.deleted': entry(1, UserDeletedV1),
  'notification.withdrawn': entry(1, NotificationWithdrawnV1),
} as const;

export type EventType = keyof typeof EVENT_TYPES;
export const EVENT_TYPE_NAMES = Object.freeze(Object.keys(EVENT_TYPES)) as readonly EventType[];

/** Routing keys on `community.events`: the routing key of a message is its event type. */
export const RoutingKey = {
  UserUpserted: 'user.upserted',
  UserMentioned: 'user.mentioned',
  CommentCreated: 'comment.created',
  ReactionAdded: 'reaction.added',
  UserFollowed: 'user.followed',
  UserUnfollowed: 'user.unfollowed',
  PostPublished: 'post.published',
  SecurityAlert: 'security.alert',
  NotificationCreated: 'notification.created',
  UserErased: 'user.erased',
  CommentDeleted: 'comment.deleted',
  PostDeleted: 'post.deleted',
  ReactionRemoved: 'reaction.removed',
  UserDeleted: 'user.deleted',
  NotificationWithdrawn: 'notification.withdrawn',
} as const satisfies Record<string, EventType>;
export type RoutingKey = (typeof RoutingKey)[keyof typeof RoutingKey];

// Every event type has a routing key (compile-time exhaustiveness check).
type MissingRoutingKey = Exclude<EventType, RoutingKey>;
const _allRouted: MissingRoutingKey extends never ? true : never = true;
void _allRouted;

export function isEventType(type: unknown): type is EventType {
  return typeof type === 'string' && Object.prototype.hasOwnProperty.call(EVENT_TYPES, type);
}

/** Full envelope schema of each type, e.g. for documentation or JSON Schema export. */
export function eventSchemaOf<T extends EventType>(type: T) {
  const entry: (typeof EVENT_TYPES)[T] = EVENT_TYPES[type];
  return envelopeSchema(type, entry.version, entry.dataSchema);
}

export type EventVersion<T extends EventType> = (typeof EVENT_TYPES)[T]['version'];
export type EventData<T extends EventType> = Static<(typeof EVENT_TYPES)[T]['dataSchema']>;

export interface EventOf<T extends EventType> {
  id: string;
  type: T;
  version: EventVersion<T>;
  occurredAt: string;
  producer: string;
  correlationId: string;
  data: EventData<T>;
}

/** Discriminated union (on `type`) of every event of the contract. */
export type AnyEvent = { [T in EventType]: EventOf<T> }[EventType];
