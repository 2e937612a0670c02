/**
 * Every error the HTTP API answers with, by code. Bodies keep fastify's shape
 * `{ statusCode, code, error, message }`; the message says what is wrong and what is expected.
 */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const ERRORS = {
  FORBIDDEN_INBOX: (subject: string, target: string) =>
    new HttpError(403, 'NS_FORBIDDEN_INBOX', `user '${subject}' may not access the notifications of user '${target}' (admin scope required)`),
  NOTIFICATION_NOT_FOUND: (id: string) => new HttpError(404, 'NS_NOTIFICATION_NOT_FOUND', `notification '${id}' does not exist in this inbox`),
  STALE_VERSION: (id: string, seen: number, current: number) =>
    new HttpError(
      409,
      'NS_STALE_VERSION',
      `notification '${id}' changed after version ${seen} (now at version ${current}); reload it and retry if still intended`,
    ),
  INVALID_CURSOR: () => new HttpError(400, 'NS_INVALID_CURSOR', "querystring/cursor is not a cursor issued by this API (use 'nextCursor' from a previous page)"),
  INVALID_BODY: (message: string) => new HttpError(400, 'NS_INVALID_BODY', message),
  INVALID_PREFERENCES: (message: string) => new HttpError(400, 'NS_INVALID_PREFERENCES', message),
  INVALID_LAST_EVENT_ID: (value: string) =>
    new HttpError(400, 'NS_INVALID_LAST_EVENT_ID', `Last-Event-ID '${value.slice(0, 40)}' is not an event id of this stream (expected a non-negative integer)`),
} as const;

export type ErrorCode = keyof typeof ERRORS;
