import type { KeyObject } from 'node:crypto';
import { createVerifier } from 'fast-jwt';
import type { FastifyRequest } from 'fastify';
import { defineErrors } from '../http-errors';
import { SECURITY, withSecurity } from './security';
import { pemOf } from './signers';
import {
  decodeComplete,
  expiresAtOf,
  refusal,
  scopesOf,
  TokenRefused,
  type Claims,
  type Principal,
  type RawHeader,
} from './tokens';

// The routes' guards: who may call what, and the 401/403 answers in the service's own codes.

/**
 * Tokens another service signs with its own Ed25519 private key (docs/EMAIL.md "Secrets"): EdDSA
 * only, `iss` and `aud` pinned, `exp` required. The verifying service holds only the public key, so
 * it cannot mint them, and the signing service holds no secret that makes user or admin tokens.
 */
export interface ServiceTokenOptions {
  /** The issuing service's public key (SPKI PEM or a KeyObject). */
  verifyKey: string | KeyObject;
  /** The one issuer accepted, e.g. `email-service`. */
  issuer: string;
  /** This service's name, which the token's `aud` must be. */
  audience: string;
}

export interface AuthGuardOptions {
  /** The service's error-code prefix, e.g. `NS_`. */
  prefix: string;
  /** What a user's routes hold, for the 403 message: "notifications", "feed". */
  resource: string;
  /** The code (without prefix) of the 403 for another user's resource; default `FORBIDDEN_USER`. */
  forbiddenCode?: string;
  /** Accept service tokens (EdDSA) besides user tokens; only `ownOrAdminOrService` lets them through. */
  serviceTokens?: ServiceTokenOptions;
}

/** The bearer token of a request, undefined without an `Authorization: Bearer …` header. */
function bearerOf(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  return typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7) : undefined;
}

/** A JWT's header, undefined when the token is not one (the verifiers then refuse it). */
function headerOf(token: string): RawHeader | undefined {
  try {
    return (decodeComplete(token) as { header: RawHeader }).header;
  } catch {
    return undefined;
  }
}

/**
 * onRequest hooks, so authentication comes before validation: an anonymous caller learns nothing
 * about the API from 400s. 401 without a valid token; 403 when the subject is another user (and
 * the caller is no operator), or when an admin route is called without an operator's admin token.
 * The verifiers are the app's (`registerAuth`), so these guards can be built before the config is read.
 */
export function authGuards({ prefix, resource, forbiddenCode = 'FORBIDDEN_USER', serviceTokens }: AuthGuardOptions) {
  const errors = defineErrors(prefix, {
    INVALID_TOKEN: { statusCode: 401, message: (reason: string) => `Authorization token is invalid: ${reason}` },
    TOKEN_WITHOUT_SUBJECT: { statusCode: 401, message: "the token has no 'sub' claim (the user id)" },
    FORBIDDEN_USER: {
      statusCode: 403,
      message: (subject: string, target: string) =>
        `user '${subject}' may not access the ${resource} of user '${target}' (an operator's admin token required)`,
    },
    ADMIN_REQUIRED: {
      statusCode: 403,
      message: (subject: string) =>
        `user '${subject}' may not use this route: admin routes need an operator's admin token (EdDSA, signed with a key in ADMIN_KEYS); the 'admin' scope of a user token grants nothing`,
    },
    SERVICE_FORBIDDEN: {
      statusCode: 403,
      message: (issuer: string, what: string) => `a service token of '${issuer}' may not ${what}`,
    },
  });
  const verifyServiceToken = serviceTokens
    ? createVerifier({
        key: pemOf(serviceTokens.verifyKey, 'public'),
        algorithms: ['EdDSA'],
        allowedIss: serviceTokens.issuer,
        allowedAud: serviceTokens.audience,
        requiredClaims: ['iss', 'aud', 'exp', 'sub'],
        cache: false,
      })
    : undefined;

  const invalid = (reason: string, code: string) => {
    const error = errors.INVALID_TOKEN(reason);
    // The verifier's own code (e.g. FAST_JWT_EXPIRED) says more than ours; clients see it as is.
    if (code.startsWith('FAST_JWT_')) return error.withCode(code);
    return code === 'INVALID_TOKEN' ? error : error.withCode(`${prefix}${code}`);
  };

  /** A service token: its signature, issuer, audience and expiry, or 401 like any bad token. */
  function authenticateService(token: string, verify: (token: string) => unknown): Principal {
    let payload: Claims;
    try {
      payload = verify(token) as Claims;
    } catch (err) {
      const r = refusal(err);
      throw invalid(r.message, r.code);
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw errors.TOKEN_WITHOUT_SUBJECT();
    return {
      userId: payload.sub,
      admin: false,
      service: { issuer: String(payload.iss), scopes: scopesOf(payload.scope) },
      expiresAt: expiresAtOf(payload.exp),
    };
  }

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    const token = bearerOf(request);
    if (token === undefined)
      throw invalid(
        request.headers.authorization === undefined
          ? 'no Authorization header (Bearer token expected)'
          : 'the Authorization header is not a Bearer token',
        'INVALID_TOKEN',
      );
    const header = headerOf(token);
    let principal: Principal;
    // EdDSA without a kid is only ever a service token; with a kid, an operator's admin token.
    if (verifyServiceToken && header?.alg === 'EdDSA' && header.kid === undefined)
      principal = authenticateService(token, verifyServiceToken);
    else {
      try {
        if (!request.server.communityAuth)
          throw new Error('authGuards need registerAuth(app, authSettingsFrom(…)) on the app');
        principal = request.server.communityAuth.authenticate(token);
      } catch (err) {
        if (!(err instanceof TokenRefused)) throw err;
        if (err.code === 'TOKEN_WITHOUT_SUBJECT') throw errors.TOKEN_WITHOUT_SUBJECT();
        throw invalid(err.message, err.code);
      }
    }
    request.principal = principal;
    return principal;
  }

  const ownOrAdmin = (request: FastifyRequest, principal: Principal): void => {
    if (principal.service)
      throw errors.SERVICE_FORBIDDEN(
        principal.service.issuer,
        `call ${request.method} ${request.routeOptions.url ?? request.url}`,
      );
    const target = (request.params as { userId?: string }).userId;
    if (!principal.admin && principal.userId !== target) {
      throw errors.FORBIDDEN_USER(principal.userId, target ?? '').withCode(`${prefix}${forbiddenCode}`);
    }
  };

  // Each guard carries what it accepts (withSecurity), which the service's /openapi.json documents.
  return {
    /** For `/v1/users/:userId/...`: the user themself, or an admin. Service tokens: 403. */
    ownOrAdmin: withSecurity(async (request: FastifyRequest): Promise<void> => {
      ownOrAdmin(request, await authenticate(request));
    }, SECURITY.ownOrAdmin),
    /**
     * The same, and a service token that holds `scope`, on the given methods only (403 otherwise).
     * What the scope allows inside the route (e.g. a body that only turns email off) is the
     * route's to check, with `serviceForbidden`.
     */
    ownOrAdminOrService(scope: string, methods: readonly string[]) {
      return withSecurity(async (request: FastifyRequest): Promise<void> => {
        const principal = await authenticate(request);
        if (!principal.service) return ownOrAdmin(request, principal);
        if (!principal.service.scopes.includes(scope))
          throw errors.SERVICE_FORBIDDEN(principal.service.issuer, `call this route without the '${scope}' scope`);
        if (!methods.includes(request.method))
          throw errors.SERVICE_FORBIDDEN(
            principal.service.issuer,
            `${request.method} this route (scope '${scope}' allows ${methods.join(', ')})`,
          );
      }, SECURITY.ownOrAdminOrService(scope));
    },
    /** The 403 a route answers when a service token asks for more than its scope allows. */
    serviceForbidden(principal: Principal, what: string) {
      return errors.SERVICE_FORBIDDEN(principal.service?.issuer ?? principal.userId, what);
    },
    /** For admin routes (the reconciler's console and repairs). */
    adminOnly: withSecurity(async (request: FastifyRequest): Promise<void> => {
      const principal = await authenticate(request);
      if (principal.service) throw errors.SERVICE_FORBIDDEN(principal.service.issuer, 'use admin routes');
      if (!principal.admin) throw errors.ADMIN_REQUIRED(principal.userId);
    }, SECURITY.adminOnly),
  };
}
