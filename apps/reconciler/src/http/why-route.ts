import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app';
import { explain } from '../domain/why';
import { gatherWhy } from '../store/why';
import { adminOnly } from './auth';
import { ERRORS, STORABLE_ID } from './errors';

/** GET /v1/admin/why?userId=&eventId=|commentId=|idempotencyKey= (docs/RECONCILER.md "Why"). */
export function registerWhyRoute(app: FastifyInstance, deps: AppDeps): void {
  const id = { ...STORABLE_ID, maxLength: 1024 } as const;
  app.get<{ Querystring: { userId: string; eventId?: string; commentId?: string; idempotencyKey?: string } }>(
    '/v1/admin/why',
    {
      onRequest: adminOnly,
      schema: {
        querystring: { type: 'object', required: ['userId'], properties: { userId: id, eventId: id, commentId: id, idempotencyKey: id }, additionalProperties: false },
      },
    },
    async (req) => {
      const q = req.query;
      const given = [q.eventId, q.commentId, q.idempotencyKey].filter((x) => x !== undefined);
      if (given.length !== 1) throw ERRORS.WHY_TARGET_REQUIRED();
      const dlqs = deps.workQueues.filter((w) => w.startsWith('notification-service.') || w.startsWith('email-service.')).map((w) => `${w}.dlq`);
      const facts = await gatherWhy(deps.pool, deps.management, dlqs, q);
      return explain(q, facts);
    },
  );
}
