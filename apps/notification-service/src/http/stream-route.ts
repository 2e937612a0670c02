import type { Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { InboxHub } from '../sse/hub';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

/**
 * GET /v1/users/:userId/notifications/stream: Server-Sent Events (design in sse/hub.ts).
 * Authorised like every inbox route (Authorization: Bearer), so browsers use a fetch-based
 * EventSource that can send the header. `Last-Event-ID` resumes after the last `count` event seen.
 */
export function registerStreamRoute(app: FastifyInstance, deps: { hub: InboxHub; guards: InboxGuards }): void {
  const { authorizeInbox } = deps.guards;
  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/notifications/stream',
    { onRequest: authorizeInbox, schema: { params: UserParams } },
    async (request, reply) => {
      const header = request.headers['last-event-id'];
      const raw = Array.isArray(header) ? header[0] : header;
      let lastEventId: number | undefined;
      if (raw !== undefined && raw !== '') {
        if (!/^\d{1,15}$/.test(raw.trim())) throw ERRORS.INVALID_LAST_EVENT_ID(raw);
        lastEventId = Number(raw.trim());
      }
      // From here on the hub owns the response: fastify must not send or time it out.
      reply.hijack();
      request.raw.setTimeout(0);
      deps.hub.open(request.params.userId, reply.raw, lastEventId);
    },
  );
}
