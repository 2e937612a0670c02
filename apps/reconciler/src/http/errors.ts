import { defineErrors } from '@community/service';

/**
 * Every error the reconciler answers with besides the token errors (RC_INVALID_TOKEN,
 * RC_TOKEN_WITHOUT_SUBJECT, RC_ADMIN_REQUIRED: `authGuards` in libs/observability), by code: the
 * admin API's and the DLQ console's (`RC_DLQ_…`, src/dlq/routes.ts). One catalogue for the whole
 * app, so its codes are unique by construction; docs/ERRORS.md lists them
 * (scripts/dev/error-catalogue.spec.ts holds the two together).
 */
export const ERRORS = defineErrors('RC_', {
  UNKNOWN_JOB: { statusCode: 404, message: (job: string, known: string) => `no job named '${job}' (known: ${known})` },
  JOB_BUSY: {
    statusCode: 409,
    message: (job: string) =>
      `job '${job}' is running on a replica right now; try again when it ends (GET /v1/admin/jobs)`,
  },
  FEED_TARGET_REQUIRED: { statusCode: 400, message: 'give exactly one of userId or all: true' },
  WHY_TARGET_REQUIRED: {
    statusCode: 400,
    message: 'give userId and exactly one of eventId, commentId or idempotencyKey',
  },
  ERASURE_KEY_REUSED: {
    statusCode: 409,
    message: (userId: string) =>
      `this Idempotency-Key already requested the erasure of user '${userId}'; use a new key for another user`,
  },
  REDRIVE_WINDOW: {
    statusCode: 400,
    message: (since: string, until: string) => `since (${since}) must be before until (${until})`,
  },
  REDRIVE_NO_MESSAGING: {
    statusCode: 503,
    message:
      'this reconciler runs without messaging (no publisher): a re-drive cannot publish; run it on a replica with messaging',
  },
  UNKNOWN_ERASURE: {
    statusCode: 404,
    message: (id: string) => `no erasure with id ${id} (the id POST /v1/admin/users/:userId/erasure answered)`,
  },
  // The DLQ console's (src/dlq/routes.ts). Messages say what is wrong and what is expected.
  DLQ_MESSAGE_NOT_FOUND: {
    statusCode: 404,
    message: (id: string) => `dead letter '${id}' does not exist (ids come from GET /v1/admin/dlq/messages)`,
  },
  DLQ_OPERATION_NOT_FOUND: {
    statusCode: 404,
    message: (id: string) => `operation '${id}' does not exist (ids come from a replay or discard answer)`,
  },
  DLQ_INVALID_FILTER: { statusCode: 400, message: (reason: string) => reason },
  DLQ_INVALID_SELECTION: { statusCode: 400, message: (reason: string) => reason },
  DLQ_DISCARD_TOO_MANY: {
    statusCode: 400,
    message: (matched: number, max: number) =>
      `this discard selects ${matched} messages, more than the ${max} one call may discard: narrow the selection, or send "all": true with "expectedCount": ${matched} (the dry run's count)`,
  },
  DLQ_DISCARD_COUNT_CHANGED: {
    statusCode: 409,
    message: (expected: number, matched: number) =>
      `"expectedCount" is ${expected} but the selection matches ${matched} messages now; dry-run again and send its count`,
  },
});

/**
 * The JSON schema of an id the routes pass to Postgres as text: PostgreSQL refuses NUL in text, so
 * an admin asking about such an id would get a 500 from the query instead of a 400 from the schema.
 */
export const STORABLE_ID = { type: 'string', minLength: 1, pattern: '^[^\\u0000]*$' } as const;
