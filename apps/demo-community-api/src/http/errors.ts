import { defineErrors } from '@community/service';

/**
 * The API's error catalogue: every 4xx this service answers, and the generic 500, by code (unprefixed on the wire, as
 * clients already know them). Bodies are `{ statusCode, code, error, message }` (fastify's shape
 * with the code), so clients can branch on `code` and people can read `message`.
 */
export const ERRORS = defineErrors('', {
  ACTOR_REQUIRED: {
    statusCode: 401,
    message: 'Name the acting user with an x-user-id header or an Authorization: Bearer <JWT> (sub = user id)',
  },
  USER_ID_HEADER_REFUSED: {
    statusCode: 401,
    message: 'x-user-id is not accepted in production: send Authorization: Bearer <user token> (sub = your user id)',
  },
  TOKEN_REQUIRED: {
    statusCode: 401,
    message: 'This write needs Authorization: Bearer <user token> (sub = your user id)',
  },
  SERVICE_TOKEN_REQUIRED: {
    statusCode: 401,
    message: (issuer: string) =>
      `Security alerts are raised by ${issuer}: send Authorization: Bearer <its service token> (scope security-alerts:raise)`,
  },
  SECURITY_ALERT_FORBIDDEN: {
    statusCode: 403,
    message: (actor: string, issuer: string) =>
      `User "${actor}" may not raise security alerts: ${issuer} does, with a service token (scope security-alerts:raise), or an admin`,
  },
  PROFILE_FORBIDDEN: {
    statusCode: 403,
    message: (actor: string, target: string) =>
      `User "${actor}" may create or update only their own profile, not "${target}" (an operator’s admin token may)`,
  },
  ACTOR_UNKNOWN: {
    statusCode: 401,
    message: (userId: string) => `The acting user "${userId}" does not exist; create it with POST /v1/users first`,
  },
  TOKEN_INVALID: { statusCode: 401, message: (reason: string) => `The bearer token is invalid: ${reason}` },
  USER_NOT_FOUND: { statusCode: 404, message: (userId: string) => `User "${userId}" not found` },
  POST_NOT_FOUND: { statusCode: 404, message: (postId: string) => `Post "${postId}" not found` },
  PARENT_COMMENT_NOT_FOUND: {
    statusCode: 404,
    message: (commentId: string, postId: string) => `Parent comment "${commentId}" not found on post "${postId}"`,
  },
  TARGET_NOT_FOUND: {
    statusCode: 404,
    message: (targetType: string, targetId: string) => `The ${targetType} "${targetId}" to react to was not found`,
  },
  COMMENT_NOT_FOUND: { statusCode: 404, message: (commentId: string) => `Comment "${commentId}" not found` },
  REACTION_NOT_FOUND: { statusCode: 404, message: (reactionId: string) => `Reaction "${reactionId}" not found` },
  DELETE_FORBIDDEN: {
    statusCode: 403,
    message: (actor: string, what: string) => `User "${actor}" may not delete ${what}: only its author may`,
  },
  TIMEZONE_INVALID: {
    statusCode: 400,
    message: (zone: string) =>
      `body/timezone ${JSON.stringify(zone)} is not an IANA time zone name this server knows (e.g. "Asia/Jakarta", "UTC"; not an offset like "+07:00")`,
  },
  SELF_FOLLOW: { statusCode: 400, message: 'A user cannot follow or unfollow themselves' },
  CORRELATION_ID_INVALID: {
    statusCode: 400,
    message: (maxLength: string) =>
      `The x-correlation-id header must be 1 to ${maxLength} characters (it is carried by every event of the request)`,
  },
  UNSTORABLE_TEXT: {
    statusCode: 400,
    message: (where: string) => `${where} must not contain NUL characters or unpaired surrogates`,
  },
  IDEMPOTENCY_KEY_INVALID: {
    statusCode: 400,
    message: (reason: string) =>
      `The Idempotency-Key header cannot be used: ${reason} (expected 1 to 255 visible ASCII characters, e.g. a UUID)`,
  },
  IDEMPOTENCY_KEY_REUSED: {
    statusCode: 422,
    message:
      'This Idempotency-Key was already used for a different request (another route, parameters or body); send a new key for a new request',
  },
  // Never names the holder: who owns an address is not the caller's to learn.
  EMAIL_TAKEN: { statusCode: 409, message: 'The email address is already used by another user' },
  RATE_LIMITED: {
    statusCode: 429,
    message: (max: string, window: string, retryAfter: string) =>
      `Too many writes: at most ${max} per ${window} for one user (or one address when anonymous); retry after ${retryAfter} s`,
  },
});
