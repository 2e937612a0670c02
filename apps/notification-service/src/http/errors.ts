import { defineErrors } from '@community/service';

/**
 * Every error the HTTP API answers with besides the token errors (NS_INVALID_TOKEN,
 * NS_TOKEN_WITHOUT_SUBJECT, NS_FORBIDDEN_INBOX: `authGuards` in libs/observability), by code (`NS_` + key on the wire). Bodies keep fastify's
 * shape `{ statusCode, code, error, message }`; the message says what is wrong and what is expected.
 */
export const ERRORS = defineErrors('NS_', {
  NOTIFICATION_NOT_FOUND: {
    statusCode: 404,
    message: (id: string) => `notification '${id}' does not exist in this inbox`,
  },
  STALE_VERSION: {
    statusCode: 409,
    message: (id: string, seen: number, current: number) =>
      `notification '${id}' changed after version ${seen} (now at version ${current}); reload it and retry if still intended`,
  },
  INVALID_CURSOR: {
    statusCode: 400,
    message: "querystring/cursor is not a cursor issued by this API (use 'nextCursor' from a previous page)",
  },
  INVALID_BODY: { statusCode: 400, message: (message: string) => message },
  INVALID_PREFERENCES: { statusCode: 400, message: (message: string) => message },
  SERVICE_TOKEN_REQUIRED: {
    statusCode: 403,
    message: (who: string, issuers: string, scope: string) =>
      `${who} may not use this route: it takes a service token of ${issuers} with the scope '${scope}'`,
  },
  TOO_MANY_STREAMS: {
    statusCode: 429,
    message: (max: number) =>
      `this inbox already has ${max} open streams on this server (the limit, SSE_MAX_STREAMS_PER_USER); close one (a tab) or retry later`,
  },
  STREAMS_FULL: {
    statusCode: 503,
    message: (max: number) =>
      `this server holds its maximum of ${max} streams (SSE_MAX_STREAMS); retry later, possibly on another replica`,
  },
  INVALID_LAST_EVENT_ID: {
    statusCode: 400,
    message: (value: string) =>
      `Last-Event-ID '${value.slice(0, 40)}' is not an event id of this stream (expected a non-negative integer)`,
  },
});
