/**
 * The API's error catalogue: every 4xx this service answers, by code. Fastify's default error
 * handler turns an ApiError into `{ statusCode, code, error, message }` (its usual shape, with the
 * code), so clients can branch on `code` and people can read `message`.
 */
export const API_ERRORS = {
  ACTOR_REQUIRED: { statusCode: 401, message: 'Name the acting user with an x-user-id header or an Authorization: Bearer <JWT> (sub = user id)' },
  ACTOR_UNKNOWN: { statusCode: 401, message: 'The acting user "%s" does not exist; create it with POST /v1/users first' },
  TOKEN_INVALID: { statusCode: 401, message: 'The bearer token is invalid: %s' },
  USER_NOT_FOUND: { statusCode: 404, message: 'User "%s" not found' },
  POST_NOT_FOUND: { statusCode: 404, message: 'Post "%s" not found' },
  PARENT_COMMENT_NOT_FOUND: { statusCode: 404, message: 'Parent comment "%s" not found on post "%s"' },
  TARGET_NOT_FOUND: { statusCode: 404, message: 'The %s "%s" to react to was not found' },
  SELF_FOLLOW: { statusCode: 400, message: 'A user cannot follow or unfollow themselves' },
  CORRELATION_ID_INVALID: { statusCode: 400, message: 'The x-correlation-id header must be 1 to %s characters (it is carried by every event of the request)' },
  UNSTORABLE_TEXT: { statusCode: 400, message: '%s must not contain NUL characters or unpaired surrogates' },
  EMAIL_TAKEN: { statusCode: 409, message: 'The email address is already used by user "%s"' },
} as const satisfies Record<string, { statusCode: number; message: string }>;

export type ApiErrorCode = keyof typeof API_ERRORS;

export class ApiError extends Error {
  override name = 'ApiError';
  readonly statusCode: number;
  constructor(
    readonly code: ApiErrorCode,
    ...args: string[]
  ) {
    const spec = API_ERRORS[code];
    let i = 0;
    super(spec.message.replace(/%s/g, () => args[i++] ?? ''));
    this.statusCode = spec.statusCode;
  }
}
