import type { FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { ed25519Key } from '@community/config';
import { authGuards, TokenRefused, type Principal } from '@community/service';
import { SECURITY_ALERT_SCOPE, SERVICE_NAME } from '../config';
import { userExists } from '../store/users';
import { ERRORS } from './errors';

/**
 * Who is acting, decided in an onRequest hook (before validation, so an anonymous caller learns
 * nothing from 400s, and before the rate limit, which counts per actor).
 *
 * - In production (NODE_ENV=production) only verified tokens name anyone: a user token
 *   (`Authorization: Bearer`, verified by the shared verifiers of @community/observability, `sub` =
 *   user id) or an operator's admin token for the users' writes; a service token of
 *   SECURITY_ALERTS_ISSUER (Ed25519, scope `security-alerts:raise`, through the shared guards) for
 *   security alerts. `x-user-id` is refused with a 401.
 * - Elsewhere (the demo, the tests) `x-user-id` names the acting user as before, profiles may be
 *   written anonymously and alerts raised without a token; a token, when sent, is verified the same
 *   way and wins over the header.
 */
export interface Actor {
  /** The acting user; undefined for an anonymous write (outside production) or a service. */
  userId?: string;
  /** An admin token: may write any user's profile, and raise security alerts. */
  admin: boolean;
  via: 'token' | 'header' | 'service' | 'anonymous';
  /** What the write rate limit counts against: the user, the service, or the client address. */
  rateKey: string;
  /**
   * Whose stored answers this request may be replayed (http/answer-once.ts): `user:<id>`,
   * `admin:<operator>`, `service:<issuer>` or `anonymous:<client address>`. An Idempotency-Key or a
   * fingerprint is looked up under it only, so no actor ever reads another's answer.
   */
  keyScope: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    actor?: Actor;
  }
}

export interface ActorAuthOptions {
  production: boolean;
  /** SECURITY_ALERTS_ISSUER and its public key (SECURITY_ALERTS_VERIFY_KEY; required in production). */
  securityAlerts: { issuer: string; verifyKey?: string };
}

export interface ActorHooks {
  /** Posts, comments, reactions, follows: a user (token, or x-user-id outside production). */
  userWrite(request: FastifyRequest): Promise<void>;
  /** POST /v1/users: a user (who may write only their own profile; admin any), anonymous outside production. */
  profileWrite(request: FastifyRequest): Promise<void>;
  /** POST /v1/security-alerts: a service token with the scope (or an admin token); anonymous outside production. */
  securityAlert(request: FastifyRequest): Promise<void>;
}

const anonymous = (request: FastifyRequest): Actor => ({
  admin: false,
  via: 'anonymous',
  rateKey: `ip:${request.ip}`,
  keyScope: `anonymous:${request.ip}`,
});

/** A verified user or operator (an admin token's userId is the operator its kid belongs to). */
const principalActor = (principal: Principal): Actor => ({
  userId: principal.userId,
  admin: principal.admin,
  via: 'token',
  rateKey: `user:${principal.userId}`,
  keyScope: `${principal.admin ? 'admin' : 'user'}:${principal.userId}`,
});

/** A 401 of the shared guards keeps this API's code (TOKEN_INVALID) and says why; anything else as is. */
function asTokenInvalid(err: unknown): unknown {
  const e = err as { statusCode?: number; message?: string };
  return e.statusCode === 401 ? ERRORS.TOKEN_INVALID(e.message ?? 'rejected') : err;
}

export function actorHooks({ production, securityAlerts }: ActorAuthOptions): ActorHooks {
  const guards = authGuards({
    prefix: '',
    resource: 'profile',
    serviceTokens: securityAlerts.verifyKey
      ? {
          verifyKey: ed25519Key('public', securityAlerts.verifyKey),
          issuer: securityAlerts.issuer,
          audience: SERVICE_NAME,
        }
      : undefined,
  });
  const alertGuard = guards.ownOrAdminOrService(SECURITY_ALERT_SCOPE, ['POST']);

  /**
   * The user (or operator) a bearer token names, verified by the app's shared verifiers
   * (`registerAuth`: user tokens with `iss`/`aud`/`exp` and a bounded lifetime, operators' admin
   * tokens). Not the guards' `ownOrAdmin`: its ownership check is of `:userId`, which on this API
   * names someone else (the user followed) or nothing; what the actor may do is the route's to
   * decide. A service token is no user token: refused here like any token that does not verify.
   */
  function userFromToken(request: FastifyRequest): Principal {
    const header = request.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : '';
    if (!token) throw ERRORS.TOKEN_INVALID('the Authorization header is not a Bearer token');
    try {
      return request.server.communityAuth.authenticate(token);
    } catch (err) {
      if (err instanceof TokenRefused) throw ERRORS.TOKEN_INVALID(err.message);
      throw err;
    }
  }

  async function identify(request: FastifyRequest, allowAnonymous: boolean): Promise<Actor> {
    if (request.headers.authorization) {
      return principalActor(userFromToken(request));
    }
    const header = request.headers['x-user-id'];
    const named = typeof header === 'string' && header.trim() ? header.trim() : undefined;
    if (production)
      throw named !== undefined || header !== undefined ? ERRORS.USER_ID_HEADER_REFUSED() : ERRORS.TOKEN_REQUIRED();
    if (named !== undefined)
      return { userId: named, admin: false, via: 'header', rateKey: `user:${named}`, keyScope: `user:${named}` };
    if (allowAnonymous) return anonymous(request);
    throw ERRORS.ACTOR_REQUIRED();
  }

  return {
    async userWrite(request) {
      request.actor = await identify(request, false);
    },
    async profileWrite(request) {
      request.actor = await identify(request, !production);
    },
    async securityAlert(request) {
      if (!request.headers.authorization) {
        if (production) throw ERRORS.SERVICE_TOKEN_REQUIRED(securityAlerts.issuer);
        request.actor = anonymous(request);
        return;
      }
      request.principal = undefined;
      try {
        await alertGuard(request);
      } catch (err) {
        const principal = request.principal as Principal | undefined;
        // A user token without the admin scope: not who raises alerts.
        if (principal && !principal.service && (err as { code?: string }).code === 'FORBIDDEN_USER') {
          throw ERRORS.SECURITY_ALERT_FORBIDDEN(principal.userId, securityAlerts.issuer);
        }
        throw asTokenInvalid(err);
      }
      const principal = request.principal as unknown as Principal;
      request.actor = principal.service
        ? {
            admin: false,
            via: 'service',
            rateKey: `service:${principal.service.issuer}`,
            keyScope: `service:${principal.service.issuer}`,
          }
        : principalActor(principal);
    },
  };
}

/** The acting user of a user write (set by `userWrite`), who must exist. */
export async function actingUser(request: FastifyRequest, pool: Pool): Promise<string> {
  const userId = request.actor?.userId;
  if (!userId) throw ERRORS.ACTOR_REQUIRED();
  if (!(await userExists(pool, userId))) throw ERRORS.ACTOR_UNKNOWN(userId);
  return userId;
}

/** 403 unless the actor may write `target`'s profile: themselves, or an admin; anonymous only outside production. */
export function assertMayWriteProfile(request: FastifyRequest, target: string): void {
  const actor = request.actor;
  if (actor?.userId !== undefined && !actor.admin && actor.userId !== target)
    throw ERRORS.PROFILE_FORBIDDEN(actor.userId, target);
}
