import type { Static } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses, textResponse } from '@community/service';
import type { InboxHub } from '../sse/hub';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

/** Retry-After of a refused stream: the user's limit frees when a tab closes; a full replica sooner, elsewhere. */
const USER_RETRY_AFTER_S = 30;
const REPLICA_RETRY_AFTER_S = 5;

/**
 * GET /v1/users/:userId/notifications/stream: Server-Sent Events (design in sse/hub.ts).
 * Authorised like every inbox route (Authorization: Bearer), so browsers use a fetch-based
 * EventSource that can send the header. `Last-Event-ID` resumes after the last `count` event seen.
 * Refused with 429 NS_TOO_MANY_STREAMS / 503 NS_STREAMS_FULL (and Retry-After) over the limits;
 * ends with a `token-expired` event when the token expires (sse/hub.ts).
 */
export function registerStreamRoute(app: FastifyInstance, deps: { hub: InboxHub; guards: InboxGuards }): void {
  const { authorizeInbox } = deps.guards;
  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/notifications/stream',
    // No automatic HEAD route: it would run this handler, open a stream the caller never gets a
    // head for, and hold one of the user's SSE_MAX_STREAMS_PER_USER places until the token expires.
    {
      onRequest: authorizeInbox,
      exposeHeadRoute: false,
      schema: {
        tags: ['notifications'],
        summary: "Server-Sent Events of the user's inbox (Last-Event-ID resumes)",
        params: UserParams,
        headers: Type.Object({
          'last-event-id': Type.Optional(
            Type.String({ description: 'resume after this `count` event (its id, an inbox version)' }),
          ),
        }),
        response: {
          // The hub writes the stream itself (reply.hijack): this only describes it.
          200: textResponse(
            'text/event-stream',
            'An open event stream. `notification` (data: a notification item) for each new one, then `count` (data: `{ "count", "version" }`, id: the inbox version, what Last-Event-ID resumes after); `reset` (data: `{ "reason" }`) when too much was missed to replay: reload the list; `token-expired` (data: `{ "reason", "expiredAt" }`) when the token expires, then the stream ends. `: heartbeat` comments keep it open.',
          ),
          ...errorResponses(400, 401, 403, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const header = request.headers['last-event-id'];
      const raw = Array.isArray(header) ? header[0] : header;
      let lastEventId: number | undefined;
      if (raw !== undefined && raw !== '') {
        if (!/^\d{1,15}$/.test(raw.trim())) throw ERRORS.INVALID_LAST_EVENT_ID(raw);
        lastEventId = Number(raw.trim());
      }
      // Admission and open in the same tick: no other stream can take the last place in between.
      const refusal = deps.hub.admission(request.params.userId);
      if (refusal) {
        reply.header('retry-after', String(refusal.limit === 'user' ? USER_RETRY_AFTER_S : REPLICA_RETRY_AFTER_S));
        throw refusal.limit === 'user' ? ERRORS.TOO_MANY_STREAMS(refusal.max) : ERRORS.STREAMS_FULL(refusal.max);
      }
      // From here on the hub owns the response: fastify must not send or time it out.
      reply.hijack();
      request.raw.setTimeout(0);
      // It ends when the token does (request.principal.expiresAt, from the token's exp).
      deps.hub.open(request.params.userId, reply.raw, lastEventId, request.principal?.expiresAt);
    },
  );
}
