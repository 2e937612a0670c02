import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ERRORS } from './errors';

export interface Principal {
  userId: string;
  admin: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** HS256 only: a token signed with another algorithm (or `none`) is invalid, whatever its claims. */
export function registerAuth(app: FastifyInstance, secret: string): void {
  // Loaded at app.ready() like every plugin: request.jwtVerify is only called once requests flow.
  app.register(fastifyJwt, { secret, sign: { algorithm: 'HS256' }, verify: { algorithms: ['HS256'] } });
}

/** `scope` as OAuth writes it ("read admin") or as a JSON array. */
function scopesOf(scope: unknown): string[] {
  if (typeof scope === 'string') return scope.split(/\s+/).filter(Boolean);
  if (Array.isArray(scope)) return scope.filter((s): s is string => typeof s === 'string');
  return [];
}

/**
 * onRequest hook of every /v1/users/:userId/... route, so authentication comes before validation:
 * an anonymous caller learns nothing about the API from 400s. 401 without a valid token, 403 when
 * the token's subject is another user and has no admin scope.
 */
export async function authorizeInbox(request: FastifyRequest): Promise<void> {
  let payload: { sub?: unknown; scope?: unknown };
  try {
    payload = await request.jwtVerify<{ sub?: unknown; scope?: unknown }>();
  } catch (err) {
    const e = err as { statusCode?: number; code?: string; message?: string };
    // Whatever the verifier refused is "no valid token": @fastify/jwt answers 400 for a malformed
    // header, and lets some of fast-jwt's errors (e.g. a disallowed algorithm) through without a status.
    if (e.statusCode === 401) throw err;
    const invalid = ERRORS.INVALID_TOKEN(e.message ?? 'rejected');
    // The verifier's own code (e.g. FAST_JWT_EXPIRED) says more than ours; clients see it as is.
    throw e.code ? invalid.withCode(e.code) : invalid;
  }
  if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw ERRORS.TOKEN_WITHOUT_SUBJECT();
  const principal = { userId: payload.sub, admin: scopesOf(payload.scope).includes('admin') };
  const target = (request.params as { userId?: string }).userId;
  if (!principal.admin && principal.userId !== target) throw ERRORS.FORBIDDEN_INBOX(principal.userId, target ?? '');
  request.principal = principal;
}
