import { defineErrors } from '@community/observability';

/**
 * The API's error catalogue: every 4xx this service answers, by code (unprefixed on the wire, as
 * clients already know them). Bodies are `{ statusCode, code, error, message }` (fastify's shape
 * with the code), so clients can branch on `code` and people can read `message`.
 */
export const ERRORS = defineErrors('', {
  ACTOR_REQUIRED: { statusCode: 401, message: 'Name the acting user with an x-user-id header or an Authorization: Bearer <JWT> (sub = user id)' },
  ACTOR_UNKNOWN: { statusCode: 401, message: (userId: string) => `The acting user "${userId}" does not exist; create it with POST /v1/users first` },
  TOKEN_INVALID: { statusCode: 401, message: (reason: string) => `The bearer token is invalid: ${reason}` },
  USER_NOT_FOUND: { statusCode: 404, message: (userId: string) => `User "${userId}" not found` },
  POST_NOT_FOUND: { statusCode: 404, message: (postId: string) => `Post "${postId}" not found` },
  PARENT_COMMENT_NOT_FOUND: { statusCode: 404, message: (commentId: string, postId: string) => `Parent comment "${commentId}" not found on post "${postId}"` },
  TARGET_NOT_FOUND: { statusCode: 404, message: (targetType: string, targetId: string) => `The ${targetType} "${targetId}" to react to was not found` },
  SELF_FOLLOW: { statusCode: 400, message: 'A user cannot follow or unfollow themselves' },
  CORRELATION_ID_INVALID: {
    statusCode: 400,
    message: (maxLength: string) => `The x-correlation-id header must be 1 to ${maxLength} characters (it is carried by every event of the request)`,
  },
  UNSTORABLE_TEXT: { statusCode: 400, message: (where: string) => `${where} must not contain NUL characters or unpaired surrogates` },
  EMAIL_TAKEN: { statusCode: 409, message: (holder: string) => `The email address is already used by user "${holder}"` },
});
