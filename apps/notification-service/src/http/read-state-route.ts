import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { errorResponses } from '@community/service';
import { readIdempotencyKeys } from '../store/read-state';
import { READ_STATE_SECURITY, type InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

/** Keys one call may ask about (ReadStateClient's READ_STATE_MAX_KEYS). */
const MAX_KEYS = 100;
const MAX_KEY_LENGTH = 1024;
const MAX_USER_ID_LENGTH = 256;

export const ReadStateRequest = Type.Object(
  {
    userId: UserParams.properties.userId,
    idempotencyKeys: Type.Array(Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH, pattern: '^[^\\u0000]*$' }), {
      minItems: 1,
      maxItems: MAX_KEYS,
      description: "notification.created's idempotencyKey of each held email or push",
    }),
  },
  { additionalProperties: false },
);

export const ReadStateAnswer = Type.Object({
  read: Type.Array(Type.String(), {
    description:
      'the keys (of those asked, of this user) whose in-app notification the user has read; an unknown key is simply absent',
  }),
});

const isText = (v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max && !v.includes('\u0000');

/**
 * The body, checked by hand like the service's other bodies (fastify's validator would drop a stray
 * field and turn a number into a string): each problem names the field (NS_INVALID_BODY).
 */
export function parseReadStateRequest(body: unknown): Static<typeof ReadStateRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw ERRORS.INVALID_BODY('body must be a JSON object: { "userId": string, "idempotencyKeys": string[1..100] }');
  const extra = Object.keys(body).find((k) => k !== 'userId' && k !== 'idempotencyKeys');
  if (extra !== undefined)
    throw ERRORS.INVALID_BODY(`unknown field '${extra}' in body (expected only 'userId' and 'idempotencyKeys')`);
  const { userId, idempotencyKeys } = body as Record<string, unknown>;
  if (!isText(userId, MAX_USER_ID_LENGTH))
    throw ERRORS.INVALID_BODY(`body/userId must be a non-empty string of at most ${MAX_USER_ID_LENGTH} characters`);
  if (!Array.isArray(idempotencyKeys) || idempotencyKeys.length < 1 || idempotencyKeys.length > MAX_KEYS)
    throw ERRORS.INVALID_BODY(
      `body/idempotencyKeys must be an array of 1 to ${MAX_KEYS} keys, got ${Array.isArray(idempotencyKeys) ? idempotencyKeys.length : typeof idempotencyKeys}`,
    );
  const bad = idempotencyKeys.findIndex((k) => !isText(k, MAX_KEY_LENGTH));
  if (bad !== -1)
    throw ERRORS.INVALID_BODY(
      `body/idempotencyKeys/${bad} must be a non-empty string of at most ${MAX_KEY_LENGTH} characters (notification.created's idempotencyKey)`,
    );
  return { userId, idempotencyKeys: idempotencyKeys as string[] };
}

/**
 * POST /v1/internal/read-state (docs/NOTIFICATIONS.md "Delivery timing"): the senders' check after
 * a hold, before an email or push goes out. Service tokens of email-service and push-service with
 * the scope notifications:read-state only (guards.authorizeReadState).
 */
export function registerReadStateRoute(app: FastifyInstance, deps: { pool: Pool; guards: InboxGuards }): void {
  const { pool, guards } = deps;
  app.post(
    '/v1/internal/read-state',
    {
      onRequest: guards.authorizeReadState,
      config: { documentedBody: { schema: ReadStateRequest, description: 'the user and the keys asked about' } },
      schema: {
        tags: ['internal'],
        summary: 'Which of these notifications the user has read in the app (for email-service and push-service)',
        security: READ_STATE_SECURITY,
        response: { 200: ReadStateAnswer, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { userId, idempotencyKeys } = parseReadStateRequest(request.body);
      return { read: await readIdempotencyKeys(pool, userId, idempotencyKeys) };
    },
  );
}
