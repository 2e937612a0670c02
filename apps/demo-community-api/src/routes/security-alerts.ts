import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import { ApiError } from '../errors';
import { EventBatch } from '../events';
import { SecurityAlertBody } from '../schemas';

/**
 * Security alerts come from the platform itself (a new login, a changed password), not from another
 * user, so this route needs no acting user. Delivered in-app and by email whatever the preferences.
 */
export function registerSecurityAlertRoutes(app: FastifyInstance, pool: Pool): void {
  app.post<{ Body: SecurityAlertBody }>('/v1/security-alerts', { schema: { body: SecurityAlertBody } }, async (request, reply) => {
    const { userId, kind, detail } = request.body;
    const id = randomUUID();
    const row = await withTransaction(pool, async (tx) => {
      const user = await tx.query('SELECT 1 FROM community_users WHERE id = $1', [userId]);
      if (!user.rowCount) throw new ApiError('USER_NOT_FOUND', userId);
      const { rows } = await tx.query<{ created_at: Date }>(
        'INSERT INTO community_security_alerts (id, user_id, kind, detail) VALUES ($1, $2, $3, $4) RETURNING created_at',
        [id, userId, kind, detail],
      );
      await new EventBatch(request.id).add('security.alert', { alertId: id, userId, kind, detail }, userId).enqueue(tx);
      return rows[0];
    });
    return reply.code(201).send({ id, userId, kind, detail, createdAt: row.created_at });
  });
}
