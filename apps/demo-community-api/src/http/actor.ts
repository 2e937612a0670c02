import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { userExists } from '../store/users';
import { ERRORS } from './errors';

/**
 * Who is acting. This is a demo producer, not an identity provider: the acting user is whatever the
 * client says, either an `x-user-id` header (convenient with curl) or the `sub` of an HS256 JWT
 * signed with JWT_SECRET (the same tokens the other services accept). The token wins when both are
 * sent. The user must exist.
 */
export async function actingUser(request: FastifyRequest, pool: Pool): Promise<string> {
  let userId: string | undefined;
  if (request.headers.authorization) {
    try {
      const payload = await request.jwtVerify<{ sub?: unknown }>();
      if (typeof payload.sub === 'string' && payload.sub) userId = payload.sub;
      else throw new Error('the token has no sub claim');
    } catch (err) {
      throw ERRORS.TOKEN_INVALID((err as Error).message);
    }
  } else {
    const header = request.headers['x-user-id'];
    userId = typeof header === 'string' && header.trim() ? header.trim() : undefined;
  }
  if (!userId) throw ERRORS.ACTOR_REQUIRED();
  if (!(await userExists(pool, userId))) throw ERRORS.ACTOR_UNKNOWN(userId);
  return userId;
}
