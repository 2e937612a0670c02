import type { FastifyInstance } from 'fastify';
import type { PoolClient } from 'pg';
import { isTimeZone } from '@community/contracts';
import { isUniqueViolation } from '@community/db';
import { EventBatch } from '../store/outbox';
import { addFollow, emailHolder, removeFollow, upsertUser, userExists, type UserRow } from '../store/users';
import type { WriteRouteDeps } from './write-guards';
import { actingUser, assertMayWriteProfile } from './actor';
import { ERRORS } from './errors';
import {
  FOLLOW_RESPONSES,
  UNFOLLOW_RESPONSES,
  UpsertUserBody,
  USER_RESPONSES,
  UserParams,
  WriteHeaders,
  writeErrors,
} from './schemas';

const TAGS = ['users'];

function toUser(r: UserRow) {
  return {
    id: r.id,
    email: r.email,
    displayName: r.display_name,
    locale: r.locale,
    timezone: r.timezone,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function registerUserRoutes(app: FastifyInstance, { pool, guards, answerOnce }: WriteRouteDeps): void {
  /**
   * Creates or replaces a user by id: the acting user's own profile (an admin token: anyone's;
   * outside production also anonymously, as the demo's traffic does). `user.upserted` is emitted
   * only when something changed, so re-sending the same profile (the traffic generator does at
   * every start) is a quiet no-op.
   */
  app.post<{ Body: UpsertUserBody }>(
    '/v1/users',
    {
      schema: {
        tags: TAGS,
        summary: 'Create or replace a user (user.upserted when something changed)',
        headers: WriteHeaders,
        body: UpsertUserBody,
        response: { ...USER_RESPONSES, ...writeErrors(403, 409) },
      },
      onRequest: guards.profileWrite,
    },
    async (request, reply) => {
      const { id, email, displayName, locale, timezone } = request.body;
      assertMayWriteProfile(request, id);
      if (timezone !== undefined && !isTimeZone(timezone)) throw ERRORS.TIMEZONE_INVALID(timezone);
      try {
        return await answerOnce(request, reply, async (tx) => {
          // 409 without naming the holder: which user owns an address is nobody else's business.
          if ((await emailHolder(tx, email, id)) !== undefined) throw ERRORS.EMAIL_TAKEN();
          const { row, inserted, changed } = await upsertUser(tx, { id, email, displayName, locale, timezone });
          if (changed)
            await new EventBatch(request.id)
              .add('user.upserted', { userId: id, email, displayName, locale, timezone }, id)
              .enqueue(tx);
          return { status: inserted ? 201 : 200, body: toUser(row) };
        });
      } catch (err) {
        // Two requests claiming the same email at once: the unique index decides, the loser gets 409.
        if (isUniqueViolation(err, 'community_users_email_key')) throw ERRORS.EMAIL_TAKEN();
        throw err;
      }
    },
  );

  app.post<{ Params: UserParams }>(
    '/v1/users/:userId/follow',
    {
      schema: {
        tags: TAGS,
        summary: 'Follow a user (user.followed when newly following)',
        headers: WriteHeaders,
        params: UserParams,
        response: { ...FOLLOW_RESPONSES, ...writeErrors(404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const followerId = await actingUser(request, pool);
      const followeeId = request.params.userId;
      if (followeeId === followerId) throw ERRORS.SELF_FOLLOW();
      return answerOnce(request, reply, async (tx) => {
        await requireUser(tx, followeeId);
        // Following twice changes nothing and notifies nobody twice.
        const added = await addFollow(tx, followerId, followeeId);
        if (added)
          await new EventBatch(request.id).add('user.followed', { followerId, followeeId }, followeeId).enqueue(tx);
        return { status: added ? 201 : 200, body: { followerId, followeeId, following: true } };
      });
    },
  );

  app.delete<{ Params: UserParams }>(
    '/v1/users/:userId/follow',
    {
      schema: {
        tags: TAGS,
        summary: 'Unfollow a user (user.unfollowed when a follow was removed)',
        headers: WriteHeaders,
        params: UserParams,
        response: { ...UNFOLLOW_RESPONSES, ...writeErrors(404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const followerId = await actingUser(request, pool);
      const followeeId = request.params.userId;
      if (followeeId === followerId) throw ERRORS.SELF_FOLLOW();
      return answerOnce(request, reply, async (tx) => {
        await requireUser(tx, followeeId);
        if (await removeFollow(tx, followerId, followeeId)) {
          await new EventBatch(request.id).add('user.unfollowed', { followerId, followeeId }, followeeId).enqueue(tx);
        }
        return { status: 200, body: { followerId, followeeId, following: false } };
      });
    },
  );
}

async function requireUser(tx: PoolClient, userId: string): Promise<void> {
  if (!(await userExists(tx, userId))) throw ERRORS.USER_NOT_FOUND(userId);
}
