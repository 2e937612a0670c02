import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { WriteRouteDeps } from './write-guards';
import { insertSecurityAlert } from '../store/content';
import { EventBatch } from '../store/outbox';
import { userExists } from '../store/users';
import { ERRORS } from './errors';
import { SECURITY_ALERT_RESPONSES, SecurityAlertBody, WriteHeaders, writeErrors } from './schemas';

/**
 * Security alerts come from the platform itself (a new login, a changed password), not from another
 * user, and are delivered in-app and by email whatever the preferences, so in production only the
 * platform raises them: a service token of SECURITY_ALERTS_ISSUER with the `security-alerts:raise`
 * scope (or an admin token). Outside production the demo raises them without a token.
 */
export function registerSecurityAlertRoutes(app: FastifyInstance, { guards, answerOnce }: WriteRouteDeps): void {
  app.post<{ Body: SecurityAlertBody }>(
    '/v1/security-alerts',
    {
      schema: {
        tags: ['security-alerts'],
        summary: 'Raise a security alert for a user (security.alert; in-app and email whatever the preferences)',
        headers: WriteHeaders,
        body: SecurityAlertBody,
        response: { ...SECURITY_ALERT_RESPONSES, ...writeErrors(403, 404) },
      },
      onRequest: guards.securityAlert,
    },
    async (request, reply) => {
      const { userId, kind, detail } = request.body;
      return answerOnce(request, reply, async (tx) => {
        const id = randomUUID();
        if (!(await userExists(tx, userId))) throw ERRORS.USER_NOT_FOUND(userId);
        const createdAt = await insertSecurityAlert(tx, { id, userId, kind, detail });
        await new EventBatch(request.id)
          .add('security.alert', { alertId: id, userId, kind, detail }, userId)
          .enqueue(tx);
        return { status: 201, body: { id, userId, kind, detail, createdAt } };
      });
    },
  );
}
