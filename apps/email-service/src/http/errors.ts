import { defineErrors } from '@community/service';

/**
 * Every error the HTTP API answers with, by code (`ES_` + key on the wire), in fastify's shape
 * `{ statusCode, code, error, message }`.
 */
export const ERRORS = defineErrors('ES_', {
  INVALID_UNSUBSCRIBE_TOKEN: { statusCode: 400, message: 'invalid or tampered unsubscribe token' },
  EXPIRED_UNSUBSCRIBE_TOKEN: {
    statusCode: 410,
    message:
      'this unsubscribe link has expired; turn emails off in your notification settings, or use the link in a recent email',
  },
});
