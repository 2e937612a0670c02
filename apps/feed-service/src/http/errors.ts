import { defineErrors } from '@community/service';

/**
 * Every error the feed API answers with besides the token errors (FS_INVALID_TOKEN,
 * FS_TOKEN_WITHOUT_SUBJECT, FS_FORBIDDEN_USER: `authGuards` in libs/observability), by code (`FS_` + key on
 * the wire). Bodies keep fastify's shape `{ statusCode, code, error, message }`.
 */
export const ERRORS = defineErrors('FS_', {
  INVALID_CURSOR: {
    statusCode: 400,
    message: "querystring/cursor is not a cursor issued by this API (use 'nextCursor' from a previous page)",
  },
});
