import { defineErrors } from '@community/observability';

/**
 * The DLQ console's errors (`RC_DLQ_…` on the wire; the token errors come from `authGuards`).
 * Messages say what is wrong and what is expected.
 */
export const DLQ_ERRORS = defineErrors('RC_', {
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
