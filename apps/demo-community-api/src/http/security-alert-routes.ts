import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import type { WriteGuards } from './write-guards';
import { insertSecurityAlert } from '../store/content';
import { EventBatch } from '../store/outbox';
import { userExists } from '../store/users';
import { ERRORS } from './errors';
import { SecurityAlertBody } from './schemas';

/**
 * Security alerts come from the platform itself (a new login, a changed password), not from another
 * user, and are delivered in-app and by email whatever the preferences, so in production only the
 * platform raises them: a service token of SECURITY_ALERTS_ISSUER with the `security-alerts:raise`
 * scope (or an admin token). Outside production the demo raises them without a token.
 */
export function registerSecurityAlertRoutes(app: FastifyInstance, pool: Pool, guards: WriteGuards): void {
  app.post<{ Body: SecurityAlertBody }>(
    '/v1/security-alerts',
    { schema: { body: SecurityAlertBody }, onRequest: guards.securityAlert },
    async (request, reply) => {
      const { userId, kind, detail } = request.body;
      const id = randomUUID();
      const createdAt = await withTransaction(pool, async (tx) => {
        if (!(await userExists(tx, userId))) throw ERRORS.USER_NOT_FOUND(userId);
        const at = await insertSecurityAlert(tx, { id, userId, kind, detail });
        await new EventBatch(request.id)
          .add('security.alert', { alertId: id, userId, kind, detail }, userId)
          .enqueue(tx);
        return at;
      });
      return reply.code(201).send({ id, userId, kind, detail, createdAt });
    },
  );
}
