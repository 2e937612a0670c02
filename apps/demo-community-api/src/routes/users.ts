import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { isUniqueViolation, withTransaction } from '@community/db';
import { actingUser } from '../actor';
import { ApiError } from '../errors';
import { EventBatch } from '../events';
import { UpsertUserBody, UserParams } from '../schemas';

interface UserRow {
  id: string;
  email: string;
  display_name: string;
  locale: string | null;
  created_at: Date;
  updated_at: Date;
}

function toUser(r: UserRow) {
  return { id: r.id, email: r.email, displayName: r.display_name, locale: r.locale, createdAt: r.created_at, updatedAt: r.updated_at };
}

export function registerUserRoutes(app: FastifyInstance, pool: Pool): void {
  /**
   * Creates or replaces a user by id. `user.upserted` is emitted only when something changed, so
   * re-sending the same profile (the traffic generator does at every start) is a quiet no-op.
   */
  app.post<{ Body: UpsertUserBody }>('/v1/users', { schema: { body: UpsertUserBody } }, async (request, reply) => {
    const { id, email, displayName, locale } = request.body;
    try {
      const { row, status } = await withTransaction(pool, async (tx) => {
        const taken = await tx.query<{ id: string }>('SELECT id FROM community_users WHERE email = $1 AND id <> $2', [email, id]);
        if (taken.rowCount) throw new ApiError('EMAIL_TAKEN', taken.rows[0].id);
        const { rows } = await tx.query<UserRow & { inserted: boolean }>(
          `INSERT INTO community_users (id, email, display_name, locale) VALUES ($1, $2, $3, $4)
           ON CONFLICT (id) DO UPDATE
             SET email = EXCLUDED.email, display_name = EXCLUDED.display_name, locale = EXCLUDED.locale, updated_at = now()
             WHERE (community_users.email, community_users.display_name, community_users.locale)
                   IS DISTINCT FROM (EXCLUDED.email, EXCLUDED.display_name, EXCLUDED.locale)
           RETURNING *, (xmax = 0) AS inserted`,
          [id, email, displayName, locale ?? null],
        );
        if (rows.length === 0) {
          const current = await tx.query<UserRow>('SELECT * FROM community_users WHERE id = $1', [id]);
          return { row: current.rows[0], status: 200 };
        }
        await new EventBatch(request.id).add('user.upserted', { userId: id, email, displayName, locale }, id).enqueue(tx);
        return { row: rows[0], status: rows[0].inserted ? 201 : 200 };
      });
      return reply.code(status).send(toUser(row));
    } catch (err) {
      // Two requests claiming the same email at once: the unique index decides, the loser gets 409.
      if (isUniqueViolation(err, 'community_users_email_key')) throw new ApiError('EMAIL_TAKEN', 'another user');
      throw err;
    }
  });

  app.post<{ Params: UserParams }>('/v1/users/:userId/follow', { schema: { params: UserParams } }, async (request, reply) => {
    const followerId = await actingUser(request, pool);
    const followeeId = request.params.userId;
    if (followeeId === followerId) throw new ApiError('SELF_FOLLOW');
    const created = await withTransaction(pool, async (tx) => {
      await requireUser(tx, followeeId);
      const { rowCount } = await tx.query(
        'INSERT INTO community_follows (follower_id, followee_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [followerId, followeeId],
      );
      // Following twice changes nothing and notifies nobody twice.
      if (rowCount) await new EventBatch(request.id).add('user.followed', { followerId, followeeId }, followeeId).enqueue(tx);
      return Boolean(rowCount);
    });
    return reply.code(created ? 201 : 200).send({ followerId, followeeId, following: true });
  });

  app.delete<{ Params: UserParams }>('/v1/users/:userId/follow', { schema: { params: UserParams } }, async (request) => {
    const followerId = await actingUser(request, pool);
    const followeeId = request.params.userId;
    if (followeeId === followerId) throw new ApiError('SELF_FOLLOW');
    await withTransaction(pool, async (tx) => {
      await requireUser(tx, followeeId);
      const { rowCount } = await tx.query('DELETE FROM community_follows WHERE follower_id = $1 AND followee_id = $2', [followerId, followeeId]);
      if (rowCount) await new EventBatch(request.id).add('user.unfollowed', { followerId, followeeId }, followeeId).enqueue(tx);
    });
    return { followerId, followeeId, following: false };
  });
}

async function requireUser(tx: { query: Pool['query'] }, userId: string): Promise<void> {
  const { rowCount } = await tx.query('SELECT 1 FROM community_users WHERE id = $1', [userId]);
  if (!rowCount) throw new ApiError('USER_NOT_FOUND', userId);
}
