import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { errorResponses } from '@community/service';

// Request schemas (fastify validates them with ajv; a violation is a 400 whose message names the
// field, e.g. "body must have required property 'email'"). Unknown properties are dropped.

/** Lowercase so that `@Ada` and `@ada` name the same user, and every id can be @mentioned. */
export const UserId = Type.String({ pattern: '^[a-z0-9_-]{1,64}$', description: 'lowercase letters, digits, _ and -' });
const EntityId = Type.String({ minLength: 1, maxLength: 64 });

export const UpsertUserBody = Type.Object(
  {
    id: UserId,
    email: Type.String({ format: 'email', maxLength: 254 }),
    displayName: Type.String({ minLength: 1, maxLength: 200 }),
    locale: Type.Optional(Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35 })),
    timezone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'an IANA time zone name ("Asia/Jakarta"): daily digests and quiet hours follow it; an unknown zone is 400 TIMEZONE_INVALID',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpsertUserBody = Static<typeof UpsertUserBody>;

export const CreatePostBody = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 300 }),
    body: Type.String({ minLength: 1, maxLength: 20_000 }),
  },
  { additionalProperties: false },
);
export type CreatePostBody = Static<typeof CreatePostBody>;

export const PostParams = Type.Object({ postId: EntityId });
export type PostParams = Static<typeof PostParams>;

export const CreateCommentBody = Type.Object(
  {
    body: Type.String({ minLength: 1, maxLength: 10_000 }),
    parentCommentId: Type.Optional(EntityId),
  },
  { additionalProperties: false },
);
export type CreateCommentBody = Static<typeof CreateCommentBody>;

export const CommentParams = Type.Object({ commentId: EntityId });
export type CommentParams = Static<typeof CommentParams>;
export const ReactionParams = Type.Object({ reactionId: EntityId });
export type ReactionParams = Static<typeof ReactionParams>;

export const UserParams = Type.Object({ userId: Type.String({ minLength: 1, maxLength: 64 }) });
export type UserParams = Static<typeof UserParams>;

export const AddReactionBody = Type.Object(
  {
    targetType: Type.Union([Type.Literal('post'), Type.Literal('comment')]),
    targetId: EntityId,
    emoji: Type.String({ minLength: 1, maxLength: 64 }),
  },
  { additionalProperties: false },
);
export type AddReactionBody = Static<typeof AddReactionBody>;

export const SecurityAlertBody = Type.Object(
  {
    userId: Type.String({ minLength: 1, maxLength: 64 }),
    kind: Type.String({ minLength: 1, maxLength: 100 }),
    detail: Type.String({ maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type SecurityAlertBody = Static<typeof SecurityAlertBody>;

// The Idempotency-Key header, documented for /openapi.json and not validated here: a malformed key
// is refused by checkIdempotencyKey (http/answer-once.ts) with its coded 400, IDEMPOTENCY_KEY_INVALID.
export const WriteHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Your key for this request (1 to 255 visible ASCII characters, e.g. a UUID): a retry with the same key and the same request is answered with the first answer, header Idempotent-Replayed: true, and writes nothing (docs/CONTRACT.md "Producer-side dedup")',
    }),
  ),
});

// Response schemas: fastify serialises every answer from them (fast-json-stringify), so a field
// missing here would be dropped from every answer, and @fastify/swagger publishes them. Each lists
// every field the route sends, in the order it always sent them; timestamps are ISO 8601 strings.

const Timestamp = Type.String({ format: 'date-time' });

/** On a replayed answer only: the same status and body as the first answer, and nothing written. */
const REPLAYED = {
  'Idempotent-Replayed': Type.Literal('true', {
    description: 'present only when this is the stored answer to an earlier request with the same key',
  }),
};

/** A success body of `schema`, described, with the replay header documented. */
function answer<T extends TSchema>(schema: T, description: string): T {
  return { ...schema, description, headers: REPLAYED };
}

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  displayName: Type.String(),
  locale: Type.Union([Type.String(), Type.Null()]),
  timezone: Type.Union([Type.String(), Type.Null()]),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const FollowState = Type.Object({
  followerId: Type.String(),
  followeeId: Type.String(),
  following: Type.Boolean({ description: 'true after a follow, false after an unfollow' }),
});

export const Post = Type.Object({
  id: Type.String(),
  authorId: Type.String(),
  title: Type.String(),
  body: Type.String(),
  createdAt: Timestamp,
});

export const Comment = Type.Object({
  id: Type.String(),
  postId: Type.String(),
  authorId: Type.String(),
  parentCommentId: Type.Union([Type.String(), Type.Null()], { description: 'null for a comment on the post itself' }),
  body: Type.String(),
  createdAt: Timestamp,
  mentionedUserIds: Type.Array(Type.String(), { description: 'the users notified of a mention, in order' }),
});

export const Reaction = Type.Object({
  id: Type.String(),
  createdAt: Timestamp,
  actorId: Type.String(),
  targetType: Type.Union([Type.Literal('post'), Type.Literal('comment')]),
  targetId: Type.String(),
  emoji: Type.String(),
});

export const SecurityAlert = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  kind: Type.String(),
  detail: Type.String(),
  createdAt: Timestamp,
});

export const USER_RESPONSES = {
  201: answer(User, 'Created'),
  200: answer(User, 'Updated, or unchanged (no event)'),
};
export const FOLLOW_RESPONSES = {
  201: answer(FollowState, 'Now following'),
  200: answer(FollowState, 'Already following (no event)'),
};
export const UNFOLLOW_RESPONSES = {
  200: answer(FollowState, 'Not following (user.unfollowed if a follow was removed)'),
};
export const POST_RESPONSES = { 201: answer(Post, 'Published') };
export const COMMENT_RESPONSES = { 201: answer(Comment, 'Commented') };
export const REACTION_RESPONSES = {
  201: answer(Reaction, 'Added'),
  200: answer(Reaction, 'The same reaction already existed (no event)'),
};
export const DeletedPost = Type.Object({
  id: Type.String(),
  deleted: Type.Literal(true),
  comments: Type.Integer({ description: 'its comments (replies included) deleted with it' }),
  reactions: Type.Integer({ description: 'the reactions on it and on its comments deleted with it' }),
});
export const DeletedComment = Type.Object({
  id: Type.String(),
  postId: Type.String(),
  deleted: Type.Literal(true),
  commentIds: Type.Array(Type.String(), {
    description: 'every comment deleted: this one, then the replies under it (a comment.deleted each)',
  }),
});
export const RemovedReaction = Type.Object({
  id: Type.String(),
  actorId: Type.String(),
  targetType: Type.Union([Type.Literal('post'), Type.Literal('comment')]),
  targetId: Type.String(),
  emoji: Type.String(),
  deleted: Type.Literal(true),
});
export const DELETE_POST_RESPONSES = {
  200: answer(DeletedPost, 'Deleted, with its comments and reactions (post.deleted)'),
};
export const DELETE_COMMENT_RESPONSES = {
  200: answer(DeletedComment, 'Deleted, with the replies under it (comment.deleted for each)'),
};
export const DELETE_REACTION_RESPONSES = { 200: answer(RemovedReaction, 'Taken back (reaction.removed)') };
export const SECURITY_ALERT_RESPONSES = { 201: answer(SecurityAlert, 'Raised') };

/**
 * The error answers of a write route, in the shared ErrorBody: 400 (validation, the route's own,
 * IDEMPOTENCY_KEY_INVALID), 401 (no actor), 422 (IDEMPOTENCY_KEY_REUSED) and 429 (RATE_LIMITED) on
 * every one, plus the route's `statuses`.
 */
export function writeErrors(...statuses: number[]) {
  const errors = errorResponses(...[400, 401, ...statuses, 422, 429].sort((a, b) => a - b));
  return {
    ...errors,
    422: { ...errors['422'], description: 'IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used for another request' },
  };
}
