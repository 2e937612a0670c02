import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import { createSigner, createVerifier } from 'fast-jwt';
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
  /**
   * Set for a service token (another service's own Ed25519 key, see `serviceTokens`): who issued it
   * and its scopes. Such a principal is never admin and passes only guards that name its scope.
   */
  service?: { issuer: string; scopes: string[] };
  /** When the token stops being valid (ms since the epoch, from `exp`); long-lived streams end then. */
  expiresAt?: number;
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

/** A JWT's `exp` (seconds) as ms since the epoch. */
function expiresAtOf(exp: unknown): number | undefined {
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/** `scope` as OAuth writes it ("read admin") or as a JSON array. */
function scopesOf(scope: unknown): string[] {
  if (typeof scope === 'string') return scope.split(/\s+/).filter(Boolean);
  if (Array.isArray(scope)) return scope.filter((s): s is string => typeof s === 'string');
  return [];
}

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

/** A JWT's header `alg`, undefined when the header is not one (the regular verifier then refuses it). */
function headerAlg(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || !auth.startsWith('Bearer ')) return undefined;
  const header = auth.slice(7).split('.')[0];
  try {
    const alg = (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown }).alg;
    return typeof alg === 'string' ? alg : undefined;
  } catch {
    return undefined;
  }
}

function pemOf(key: string | KeyObject, kind: 'private' | 'public'): string {
  const object = typeof key === 'string' ? (kind === 'private' ? createPrivateKey(key) : createPublicKey(key)) : key;
  if (object.asymmetricKeyType !== 'ed25519') throw new Error(`service tokens need an Ed25519 ${kind} key, got ${object.asymmetricKeyType ?? 'a symmetric key'}`);
  return object.export({ type: kind === 'private' ? 'pkcs8' : 'spki', format: 'pem' }).toString();
}

export interface ServiceTokenSignerOptions {
  /** The signing service's Ed25519 private key (PKCS#8 PEM or a KeyObject). */
  signingKey: string | KeyObject;
  /** The signing service, `iss` and `sub`. */
  issuer: string;
  /** The service called, `aud`. */
  audience: string;
  /** Space-separated scopes, e.g. `preferences:opt-out`. */
  scope: string;
  /** Lifetime (default 5 minutes). */
  ttlMs?: number;
}

/** Signs short-lived service tokens (EdDSA): `iss`/`sub` the caller, `aud` the callee, `scope`. */
export function serviceTokenSigner(options: ServiceTokenSignerOptions): () => string {
  const sign = createSigner({
    key: pemOf(options.signingKey, 'private'),
    algorithm: 'EdDSA',
    iss: options.issuer,
    sub: options.issuer,
    aud: options.audience,
    expiresIn: options.ttlMs ?? 5 * 60_000,
  });
  return () => sign({ scope: options.scope });
}

/**
 * onRequest hooks, so authentication comes before validation: an anonymous caller learns nothing
 * about the API from 400s. 401 without a valid token; 403 when the subject is another user (and
 * the token has no admin scope), or when an admin route is called without the admin scope.
 */
export function authGuards({ prefix, resource, forbiddenCode = 'FORBIDDEN_USER', serviceTokens }: AuthGuardOptions) {
  const errors = defineErrors(prefix, {
    INVALID_TOKEN: { statusCode: 401, message: (reason: string) => `Authorization token is invalid: ${reason}` },
    TOKEN_WITHOUT_SUBJECT: { statusCode: 401, message: "the token has no 'sub' claim (the user id)" },
    FORBIDDEN_USER: {
      statusCode: 403,
      message: (subject: string, target: string) => `user '${subject}' may not access the ${resource} of user '${target}' (admin scope required)`,
    },
    ADMIN_REQUIRED: { statusCode: 403, message: (subject: string) => `user '${subject}' may not use this route (admin scope required)` },
    SERVICE_FORBIDDEN: { statusCode: 403, message: (issuer: string, what: string) => `a service token of '${issuer}' may not ${what}` },
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

  /** A service token: its signature, issuer, audience and expiry, or 401 like any bad token. */
  function authenticateService(request: FastifyRequest, verify: (token: string) => unknown): Principal {
    let payload: { sub?: unknown; scope?: unknown; iss?: unknown; exp?: unknown };
    try {
      payload = verify((request.headers.authorization as string).slice(7)) as typeof payload;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const invalid = errors.INVALID_TOKEN(e.message ?? 'rejected');
      throw e.code ? invalid.withCode(e.code) : invalid;
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw errors.TOKEN_WITHOUT_SUBJECT();
    const principal: Principal = { userId: payload.sub, admin: false, service: { issuer: String(payload.iss), scopes: scopesOf(payload.scope) }, expiresAt: expiresAtOf(payload.exp) };
    request.principal = principal;
    return principal;
  }

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    // EdDSA is only ever a service token: the user-token verifier accepts HS256 alone.
    if (verifyServiceToken && headerAlg(request) === 'EdDSA') return authenticateService(request, verifyServiceToken);
    let payload: { sub?: unknown; scope?: unknown; exp?: unknown };
    try {
      payload = await request.jwtVerify<{ sub?: unknown; scope?: unknown; exp?: unknown }>();
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
    const principal: Principal = { userId: payload.sub, admin: scopesOf(payload.scope).includes('admin'), expiresAt: expiresAtOf(payload.exp) };
    request.principal = principal;
    return principal;
  }

  const ownOrAdmin = (request: FastifyRequest, principal: Principal): void => {
    if (principal.service) throw errors.SERVICE_FORBIDDEN(principal.service.issuer, `call ${request.method} ${request.routeOptions.url ?? request.url}`);
    const target = (request.params as { userId?: string }).userId;
    if (!principal.admin && principal.userId !== target) {
      throw errors.FORBIDDEN_USER(principal.userId, target ?? '').withCode(`${prefix}${forbiddenCode}`);
    }
  };

  return {
    /** For `/v1/users/:userId/...`: the user themself, or an admin. Service tokens: 403. */
    async ownOrAdmin(request: FastifyRequest): Promise<void> {
      ownOrAdmin(request, await authenticate(request));
    },
    /**
     * The same, and a service token that holds `scope`, on the given methods only (403 otherwise).
     * What the scope allows inside the route (e.g. a body that only turns email off) is the
     * route's to check, with `serviceForbidden`.
     */
    ownOrAdminOrService(scope: string, methods: readonly string[]) {
      return async (request: FastifyRequest): Promise<void> => {
        const principal = await authenticate(request);
        if (!principal.service) return ownOrAdmin(request, principal);
        if (!principal.service.scopes.includes(scope)) throw errors.SERVICE_FORBIDDEN(principal.service.issuer, `call this route without the '${scope}' scope`);
        if (!methods.includes(request.method)) throw errors.SERVICE_FORBIDDEN(principal.service.issuer, `${request.method} this route (scope '${scope}' allows ${methods.join(', ')})`);
      };
    },
    /** The 403 a route answers when a service token asks for more than its scope allows. */
    serviceForbidden(principal: Principal, what: string) {
      return errors.SERVICE_FORBIDDEN(principal.service?.issuer ?? principal.userId, what);
    },
    /** For admin routes (the reconciler's console and repairs). */
    async adminOnly(request: FastifyRequest): Promise<void> {
      const principal = await authenticate(request);
      if (principal.service) throw errors.SERVICE_FORBIDDEN(principal.service.issuer, 'use admin routes');
      if (!principal.admin) throw errors.ADMIN_REQUIRED(principal.userId);
    },
  };
}
