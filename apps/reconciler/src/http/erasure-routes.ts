import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, USER_ERASED_TYPE } from '@community/contracts';
import type { Topology } from '@community/messaging';
import type { AppDeps } from './deps';
import { SERVICE_NAME } from '../config';
import { erasureStatus, requestErasure } from '../store/erasures';
import { errorResponses } from '@community/service';
import { adminOnly } from './auth';
import { ERRORS, STORABLE_ID } from './errors';
import { ErasureRequestedBody, ErasureStatusBody } from './schemas';

/**
 * The queues user.erased is bound to. Each service's erasure handler claims the event in the inbox
 * under its queue's name, so these are also the inbox consumers the status looks up.
 */
export function erasureConsumers(topology: Topology = COMMUNITY_TOPOLOGY): string[] {
  return topology.queues
    .filter((q) =>
      q.bindings.some((b) => b.exchange === EVENTS_EXCHANGE && (b.routingKeys ?? []).includes(USER_ERASED_TYPE)),
    )
    .map((q) => q.name);
}

/**
 * User erasure (docs/RUNBOOK.md "Erasure"), admin only:
 *
 * - POST /v1/admin/users/:userId/erasure: writes the audit row (the verified operator) and
 *   user.erased into the outbox in one transaction; 202 with the audit id. Idempotent per request:
 *   the same `Idempotency-Key` again answers 200 with the first request's row and publishes nothing
 *   more; the same key for another user is 409.
 * - GET /v1/admin/erasures/:erasureId: the row, when its event was published, and which consumers
 *   have erased (their inbox rows).
 */
export function registerErasureRoutes(app: FastifyInstance, deps: Pick<AppDeps, 'pool'>): void {
  const consumers = erasureConsumers();

  app.post<{ Params: { userId: string }; Headers: { 'idempotency-key'?: string } }>(
    '/v1/admin/users/:userId/erasure',
    {
      onRequest: adminOnly,
      schema: {
        tags: ['erasure'],
        summary: "Erases a user's personal data everywhere (audit row + user.erased through the outbox)",
        response: {
          200: {
            ...ErasureRequestedBody,
            description: 'The same Idempotency-Key again: the first request, nothing more published',
          },
          202: { ...ErasureRequestedBody, description: 'Requested: user.erased is on its way' },
          ...errorResponses(400, 401, 403, 409, 414),
        },
        // 256: the contract's id bound (IdSchema). The router answers 414 before this for a path
        // parameter over 100 characters (fastify's maxParamLength), as on every :userId route.
        params: { type: 'object', properties: { userId: { ...STORABLE_ID, maxLength: 256 } }, required: ['userId'] },
        headers: { type: 'object', properties: { 'idempotency-key': { ...STORABLE_ID, maxLength: 200 } } },
      },
    },
    async (req, reply) => {
      const principal = req.principal;
      // adminOnly let it through, so it is an operator's admin token: the audit names that operator.
      const requestedBy = principal?.operator?.name ?? principal?.userId ?? 'unknown';
      const requestKey = req.headers['idempotency-key'] ?? randomUUID();
      const result = await requestErasure(deps.pool, {
        requestKey,
        userId: req.params.userId,
        requestedBy,
        producer: SERVICE_NAME,
      });
      if (result.kind === 'key-reused') throw ERRORS.ERASURE_KEY_REUSED(result.erasure.userId);
      req.log.info(
        { erasureId: result.erasure.erasureId, requestedBy, replayed: result.kind === 'replayed' },
        'user erasure requested',
      );
      return reply
        .code(result.kind === 'created' ? 202 : 200)
        .send({ ...result.erasure, replayed: result.kind === 'replayed', consumers });
    },
  );

  app.get<{ Params: { erasureId: string } }>(
    '/v1/admin/erasures/:erasureId',
    {
      onRequest: adminOnly,
      schema: {
        tags: ['erasure'],
        summary: 'An erasure: when its event was published, and which consumers have erased',
        response: { 200: ErasureStatusBody, ...errorResponses(400, 401, 403, 404) },
        params: {
          type: 'object',
          properties: { erasureId: { type: 'string', pattern: '^[1-9][0-9]{0,17}$' } },
          required: ['erasureId'],
        },
      },
    },
    async (req) => {
      const status = await erasureStatus(deps.pool, req.params.erasureId, consumers);
      if (!status) throw ERRORS.UNKNOWN_ERASURE(req.params.erasureId);
      return { ...status, done: status.publishedAt !== null && status.consumers.every((c) => c.processedAt !== null) };
    },
  );
}
