import { dlqName } from '@community/messaging';
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './deps';
import { lostFrom } from '../domain/lost-work';
import { explain } from '../domain/why';
import { checkLostWork, lostWorkSettings } from '../jobs/lost-work';
import { EMAIL_QUEUE } from '../store/lost-work';
import { gatherWhy } from '../store/why';
import { errorResponses } from '@community/service';
import { adminOnly } from './auth';
import { ERRORS, STORABLE_ID } from './errors';
import { WhyBody } from './schemas';

/** GET /v1/admin/why?userId=&eventId=|commentId=|idempotencyKey= (docs/RECONCILER.md "Why"). */
export function registerWhyRoute(app: FastifyInstance, deps: AppDeps): void {
  const id = { ...STORABLE_ID, maxLength: 1024 } as const;
  app.get<{ Querystring: { userId: string; eventId?: string; commentId?: string; idempotencyKey?: string } }>(
    '/v1/admin/why',
    {
      onRequest: adminOnly,
      schema: {
        tags: ['admin'],
        summary: "Why didn't user X get notification Y? Step by step, from what the database and the DLQs hold",
        response: { 200: WhyBody, ...errorResponses(400, 401, 403) },
        querystring: {
          type: 'object',
          required: ['userId'],
          properties: { userId: id, eventId: id, commentId: id, idempotencyKey: id },
          additionalProperties: false,
        },
      },
    },
    async (req) => {
      const q = req.query;
      const given = [q.eventId, q.commentId, q.idempotencyKey].filter((x) => x !== undefined);
      if (given.length !== 1) throw ERRORS.WHY_TARGET_REQUIRED();
      const dlqs = deps.workQueues
        .filter((w) => w.startsWith('notification-service.') || w.startsWith('email-service.'))
        .map(dlqName);
      const facts = await gatherWhy(deps.pool, deps.management, dlqs, q);
      // Only when an email step is in doubt (a notification without its ledger row) does the answer
      // need the lost-work rule; it costs a management API sample and the due-row counts.
      const doubt = facts.items.some(
        (i) =>
          i.emailChannel !== 'off' &&
          !facts.deliveries.some((d) => d.idempotencyKey === i.idempotencyKey) &&
          !facts.digestItems.some((d) => d.idempotencyKey === i.idempotencyKey),
      );
      if (!doubt) return explain(q, facts);
      const now = deps.clock();
      const settings = lostWorkSettings(deps.config);
      const verdict = await checkLostWork(deps.pool, deps.management, settings, now);
      return explain(q, facts, {
        emailQueue: lostFrom(verdict, EMAIL_QUEUE),
        dueBefore: new Date(now.getTime() - settings.graceMs).toISOString(),
      });
    },
  );
}
