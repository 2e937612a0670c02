import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { defineErrors } from './http-errors';

/**
 * Bearer-token authentication shared by every HTTP API (docs/CONTRACT.md "HTTP contract"): JWT
 * HS256, `sub` is the user id, an `admin` scope opens every user's resources and the admin routes.
 * Each service keeps its own error-code prefix (`NS_INVALID_TOKEN`, `FS_INVALID_TOKEN`, …).
 */
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

export interface AuthGuardOptions {
  /** The service's error-code prefix, e.g. `NS_`. */
  prefix: string;
  /** What a user's routes hold, for the 403 message: "notifications", "feed". */
  resource: string;
  /** The code (without prefix) of the 403 for another user's resource; default `FORBIDDEN_USER`. */
  forbiddenCode?: string;
}

/**
 * onRequest hooks, so authentication comes before validation: an anonymous caller learns nothing
 * about the API from 400s. 401 without a valid token; 403 when the subject is another user (and
 * the token has no admin scope), or when an admin route is called without the admin scope.
 */
export function authGuards({ prefix, resource, forbiddenCode = 'FORBIDDEN_USER' }: AuthGuardOptions) {
  const errors = defineErrors(prefix, {
    INVALID_TOKEN: { statusCode: 401, message: (reason: string) => `Authorization token is invalid: ${reason}` },
    TOKEN_WITHOUT_SUBJECT: { statusCode: 401, message: "the token has no 'sub' claim (the user id)" },
    FORBIDDEN_USER: {
      statusCode: 403,
      message: (subject: string, target: string) => `user '${subject}' may not access the ${resource} of user '${target}' (admin scope required)`,
    },
    ADMIN_REQUIRED: { statusCode: 403, message: (subject: string) => `user '${subject}' may not use this route (admin scope required)` },
  });

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    let payload: { sub?: unknown; scope?: unknown };
    try {
      payload = await request.jwtVerify<{ sub?: unknown; scope?: unknown }>();
    } catch (err) {
      const e = err as { statusCode?: number; code?: string; message?: string };
      // Whatever the verifier refused is "no valid token": @fastify/jwt answers 400 for a malformed
      // header, and lets some of fast-jwt's errors (e.g. a disallowed algorithm) through without a status.
      if (e.statusCode === 401) throw err;
      const invalid = errors.INVALID_TOKEN(e.message ?? 'rejected');
      // The verifier's own code (e.g. FAST_JWT_EXPIRED) says more than ours; clients see it as is.
      throw e.code ? invalid.withCode(e.code) : invalid;
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw errors.TOKEN_WITHOUT_SUBJECT();
    const principal = { userId: payload.sub, admin: scopesOf(payload.scope).includes('admin') };
    request.principal = principal;
    return principal;
  }

  return {
    /** For `/v1/users/:userId/...`: the user themself, or an admin. */
    async ownOrAdmin(request: FastifyRequest): Promise<void> {
      const principal = await authenticate(request);
      const target = (request.params as { userId?: string }).userId;
      if (!principal.admin && principal.userId !== target) {
        throw errors.FORBIDDEN_USER(principal.userId, target ?? '').withCode(`${prefix}${forbiddenCode}`);
      }
    },
    /** For admin routes (the reconciler's console and repairs). */
    async adminOnly(request: FastifyRequest): Promise<void> {
      const principal = await authenticate(request);
      if (!principal.admin) throw errors.ADMIN_REQUIRED(principal.userId);
    },
  };
}
