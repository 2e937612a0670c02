import { Type, type Static } from '@sinclair/typebox';

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
