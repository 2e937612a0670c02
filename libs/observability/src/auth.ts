import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import { createDecoder, createSigner, createVerifier } from 'fast-jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseAdminKeys, type AdminKey } from '@community/config';
import { defineErrors } from './http-errors';

/**
 * Bearer-token authentication shared by every HTTP API (docs/CONTRACT.md "HTTP contract"). Three
 * principals, three kinds of token, none of which can be made from another's key:
 * - users: HS256 with JWT_SECRET (the community site issues them), `iss`/`aud` pinned, `exp`
 *   required and bounded; `sub` is the user id. An `admin` scope in such a token grants nothing.
 * - operators: EdDSA signed with the operator's own Ed25519 key, selected by the header `kid`;
 *   services hold only the public keys (ADMIN_KEYS), and the operator's identity is the one the
 *   services bind to that kid, never a claim of the token.
 * - services: EdDSA with the calling service's own key (`serviceTokens`), no `kid`.
 * Each service keeps its own error-code prefix (`NS_INVALID_TOKEN`, `FS_INVALID_TOKEN`, …).
 */
export interface Principal {
  /** The user id (`sub`); for an admin token the operator bound to its kid; for a service token its `sub`. */
  userId: string;
  admin: boolean;
  /** Set for an admin token: the verified operator and the key that signed it. */
  operator?: { name: string; kid: string };
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
  interface FastifyInstance {
    /** The token verifiers `registerAuth` set up; `authGuards` use them. */
    communityAuth: TokenAuthenticator;
  }
}

/** The `iss` of every admin token: the ops tooling, whoever the operator is. */
export const ADMIN_TOKEN_ISSUER = 'community-ops';

/** What a service accepts (docs/CONTRACT.md "HTTP contract"), from its config: `authSettingsFrom`. */
export interface AuthSettings {
  /** This service's name: the `aud` its admin tokens must carry. */
  service: string;
  userTokens: {
    /** JWT_SECRET: verifies, and signs in tests (`app.jwt.sign`). */
    secret: string;
    /** JWT_SECRET_PREVIOUS: still verifies during a rotation, signs nothing. */
    previousSecret?: string;
    issuer: string;
    audience: string;
    /** The longest a token may live: `exp - iat`, and `exp - now`. */
    maxLifetimeMs: number;
  };
  adminTokens: {
    /** ADMIN_KEYS: kid → operator and public key. */
    keys: readonly AdminKey[];
    maxLifetimeMs: number;
  };
}

/** The config variables `authSettingsFrom` reads (commonConfig in libs/config). */
export interface AuthConfig {
  readonly JWT_SECRET: string;
  readonly JWT_SECRET_PREVIOUS?: string;
  readonly USER_TOKEN_ISSUER: string;
  readonly USER_TOKEN_AUDIENCE: string;
  readonly USER_TOKEN_MAX_LIFETIME_MS: number;
  readonly ADMIN_KEYS: string;
  readonly ADMIN_TOKEN_MAX_LIFETIME_MS: number;
}

export function authSettingsFrom(service: string, config: AuthConfig): AuthSettings {
  return {
    service,
    userTokens: {
      secret: config.JWT_SECRET,
      previousSecret: config.JWT_SECRET_PREVIOUS,
      issuer: config.USER_TOKEN_ISSUER,
      audience: config.USER_TOKEN_AUDIENCE,
      maxLifetimeMs: config.USER_TOKEN_MAX_LIFETIME_MS,
    },
    adminTokens: { keys: parseAdminKeys(config.ADMIN_KEYS), maxLifetimeMs: config.ADMIN_TOKEN_MAX_LIFETIME_MS },
  };
}

/** Why a token was refused; `authGuards` turn it into the service's own coded 401. */
export class TokenRefused extends Error {
  constructor(
    message: string,
    /** The verifier's code (e.g. FAST_JWT_EXPIRED), or ours without the service prefix. */
    readonly code: string,
  ) {
    super(message);
  }
}

/** Verifies a bearer token's user or admin form; service tokens are the guards' (`serviceTokens`). */
export interface TokenAuthenticator {
  /** The principal of a valid token, or TokenRefused. */
  authenticate(token: string): Principal;
}

interface RawHeader {
  alg?: unknown;
  kid?: unknown;
}
interface Claims {
  sub?: unknown;
  scope?: unknown;
  iss?: unknown;
  exp?: unknown;
  iat?: unknown;
}

const decodeComplete = createDecoder({ complete: true });

/** fast-jwt's refusals as TokenRefused, with its code (clients see e.g. FAST_JWT_EXPIRED as is). */
function refusal(err: unknown): TokenRefused {
  const e = err as { code?: string; message?: string };
  return new TokenRefused(e.message ?? 'rejected', e.code ?? 'INVALID_TOKEN');
}

/**
 * `exp` against the authenticator's clock, refused exactly as fast-jwt refuses it (code and text), so
 * clients see no difference. Checked here rather than by fast-jwt because fast-jwt reads Date.now
 * itself: with the clock injected, a test moves time past a token's expiry instead of waiting it out.
 */
function checkExpiry(claims: Claims, now: number): void {
  // Required by the verifier, but with its own expiry check off nothing else looks at the type: a
  // string or an array would compare as NaN (never expired).
  if (typeof claims.exp !== 'number' || Number.isNaN(claims.exp))
    throw new TokenRefused('The exp claim must be a number.', 'FAST_JWT_INVALID_CLAIM_TYPE');
  const expMs = claims.exp * 1000;
  if (now > expMs)
    throw new TokenRefused(`The token has expired at ${new Date(expMs).toISOString()}.`, 'FAST_JWT_EXPIRED');
}

/** `exp - iat` (when there is an iat) and `exp - now` both within `maxMs`: a token minted to live longer is refused outright. */
function checkLifetime(claims: Claims, maxMs: number, now: number, what: string): void {
  const exp = claims.exp as number;
  const iat = typeof claims.iat === 'number' ? claims.iat : undefined;
  const lifetimeMs = (exp - (iat ?? now / 1000)) * 1000;
  const remainingMs = exp * 1000 - now;
  if (lifetimeMs > maxMs || remainingMs > maxMs) {
    throw new TokenRefused(
      `the ${what} lives longer than allowed (${Math.round(Math.max(lifetimeMs, remainingMs) / 1000)} s > ${maxMs / 1000} s)`,
      'TOKEN_LIFETIME_TOO_LONG',
    );
  }
}

/** The verifiers of user and admin tokens, built once per app (`registerAuth`). */
export function tokenAuthenticator(settings: AuthSettings, clock: () => number = Date.now): TokenAuthenticator {
  const user = settings.userTokens;
  const userVerifier = (key: string) =>
    createVerifier({
      key,
      algorithms: ['HS256'],
      allowedIss: user.issuer,
      allowedAud: user.audience,
      requiredClaims: ['iss', 'aud', 'exp'],
      // Expiry is checked below against `clock` (fast-jwt reads Date.now itself).
      ignoreExpiration: true,
      cache: false,
    });
  const userVerifiers = [
    userVerifier(user.secret),
    ...(user.previousSecret ? [userVerifier(user.previousSecret)] : []),
  ];
  const admins = new Map(
    settings.adminTokens.keys.map((k) => [
      k.kid,
      {
        key: k,
        verify: createVerifier({
          key: k.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
          algorithms: ['EdDSA'],
          allowedIss: ADMIN_TOKEN_ISSUER,
          allowedAud: settings.service,
          requiredClaims: ['iss', 'aud', 'exp'],
          ignoreExpiration: true, // checked against `clock` below
          cache: false,
        }),
      },
    ]),
  );

  function authenticateUser(token: string): Principal {
    let claims: Claims | undefined;
    let firstError: unknown;
    for (const verify of userVerifiers) {
      try {
        claims = verify(token) as Claims;
        break;
      } catch (err) {
        firstError ??= err;
        // Only a signature made with another key is worth the previous secret: any other refusal
        // (expired, wrong audience) is the same whichever secret signed it.
        if ((err as { code?: string }).code !== 'FAST_JWT_INVALID_SIGNATURE') break;
      }
    }
    if (!claims) throw refusal(firstError);
    checkExpiry(claims, clock());
    checkLifetime(claims, user.maxLifetimeMs, clock(), 'user token');
    if (typeof claims.sub !== 'string' || claims.sub.length === 0)
      throw new TokenRefused("the token has no 'sub' claim (the user id)", 'TOKEN_WITHOUT_SUBJECT');
    return { userId: claims.sub, admin: false, expiresAt: expiresAtOf(claims.exp) };
  }

  function authenticateAdmin(token: string, kid: string): Principal {
    const entry = admins.get(kid);
    if (!entry)
      throw new TokenRefused(
        `admin token signed with an unknown key id '${kid}' (not in ADMIN_KEYS)`,
        'ADMIN_KEY_UNKNOWN',
      );
    let claims: Claims;
    try {
      claims = entry.verify(token) as Claims;
    } catch (err) {
      throw refusal(err);
    }
    checkExpiry(claims, clock());
    checkLifetime(claims, settings.adminTokens.maxLifetimeMs, clock(), 'admin token');
    // The identity is the kid's, from the services' own config. A token that names someone else is
    // refused rather than silently re-attributed: it is a forgery or a misconfigured tool either way.
    if (claims.sub !== undefined && claims.sub !== entry.key.operator) {
      throw new TokenRefused(
        `the admin token's sub ${JSON.stringify(claims.sub)} is not the operator of key '${kid}'`,
        'ADMIN_SUBJECT_MISMATCH',
      );
    }
    return {
      userId: entry.key.operator,
      admin: true,
      operator: { name: entry.key.operator, kid },
      expiresAt: expiresAtOf(claims.exp),
    };
  }

  return {
    authenticate(token) {
      let header: RawHeader;
      try {
        header = (decodeComplete(token) as { header: RawHeader }).header;
      } catch (err) {
        throw refusal(err);
      }
      // An EdDSA token with a kid is an operator's; everything else must be a user token (HS256
      // only: `none`, RS256 or an EdDSA token without a kid fail the user verifier).
      if (header.alg === 'EdDSA' && header.kid !== undefined) {
        if (typeof header.kid !== 'string')
          throw new TokenRefused('the header kid is not a string', 'ADMIN_KEY_UNKNOWN');
        return authenticateAdmin(token, header.kid);
      }
      return authenticateUser(token);
    },
  };
}

/**
 * Sets up authentication on an app: the verifiers the guards use (`app.communityAuth`), and
 * @fastify/jwt for `app.jwt.sign` (tests, benchmarks: user tokens with iss/aud/exp). Its
 * `request.jwtVerify` checks iss/aud/exp too but neither the lifetime bound nor JWT_SECRET_PREVIOUS:
 * verify with `app.communityAuth` (or the guards), never with it.
 */
export function registerAuth(app: FastifyInstance, settings: AuthSettings, clock: () => number = Date.now): void {
  app.decorate('communityAuth', tokenAuthenticator(settings, clock));
  const user = settings.userTokens;
  // Loaded at app.ready() like every plugin: request.jwtVerify is only called once requests flow.
  app.register(fastifyJwt, {
    secret: user.secret,
    // @fastify/jwt reads a number as seconds (jsonwebtoken's convention), fast-jwt as ms: a string is unambiguous.
    sign: {
      algorithm: 'HS256',
      iss: user.issuer,
      aud: user.audience,
      expiresIn: `${Math.floor(Math.min(15 * 60_000, user.maxLifetimeMs) / 1000)}s`,
    },
    verify: {
      algorithms: ['HS256'],
      allowedIss: user.issuer,
      allowedAud: user.audience,
      requiredClaims: ['iss', 'aud', 'exp'],
    },
  });
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

function pemOf(key: string | KeyObject, kind: 'private' | 'public'): string {
  const object = typeof key === 'string' ? (kind === 'private' ? createPrivateKey(key) : createPublicKey(key)) : key;
  if (object.asymmetricKeyType !== 'ed25519')
    throw new Error(`service tokens need an Ed25519 ${kind} key, got ${object.asymmetricKeyType ?? 'a symmetric key'}`);
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

export interface AdminTokenSignerOptions {
  /** The operator's Ed25519 private key (PKCS#8 PEM or a KeyObject); never held by a service. */
  signingKey: string | KeyObject;
  /** Its kid in the services' ADMIN_KEYS. */
  kid: string;
  /** The service the token is for (its `aud`), e.g. `reconciler`. */
  audience: string;
  /** Lifetime (default 15 minutes; the services refuse more than ADMIN_TOKEN_MAX_LIFETIME_MS). */
  ttlMs?: number;
}

/**
 * Signs an operator's admin tokens (EdDSA, header `kid`, `iss` ADMIN_TOKEN_ISSUER): the ops CLI.
 * No `sub`: who the operator is, the services read from the kid.
 */
export function adminTokenSigner(options: AdminTokenSignerOptions): () => string {
  const sign = createSigner({
    key: pemOf(options.signingKey, 'private'),
    algorithm: 'EdDSA',
    kid: options.kid,
    iss: ADMIN_TOKEN_ISSUER,
    aud: options.audience,
    expiresIn: options.ttlMs ?? 15 * 60_000,
  });
  return () => sign({});
}

export interface UserTokenSignerOptions {
  /** JWT_SECRET. */
  secret: string;
  issuer: string;
  audience: string;
  /** Lifetime (default 15 minutes). */
  ttlMs?: number;
}

/** Signs user tokens as the community site does (HS256, `iss`, `aud`, `iat`, `exp`): tests and dev tooling. */
export function userTokenSigner(
  options: UserTokenSignerOptions,
): (sub: string, claims?: Record<string, unknown>) => string {
  const sign = createSigner({
    key: options.secret,
    algorithm: 'HS256',
    iss: options.issuer,
    aud: options.audience,
    expiresIn: options.ttlMs ?? 15 * 60_000,
  });
  return (sub, claims = {}) => sign({ ...claims, sub });
}

/** A new operator key pair: the private key (PKCS#8 PEM, for OPS_ADMIN_KEY_FILE) and its ADMIN_KEYS entry. */
export function generateOperatorKey(
  operator: string,
  kid: string,
): { privateKeyPem: string; entry: { kid: string; operator: string; publicKey: string } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const entry = { kid, operator, publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
  // The same checks the services run at start, so a bad kid or name fails here, not in production.
  parseAdminKeys(JSON.stringify([entry]));
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), entry };
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
        if (!principal.service.scopes.includes(scope))
          throw errors.SERVICE_FORBIDDEN(principal.service.issuer, `call this route without the '${scope}' scope`);
        if (!methods.includes(request.method))
          throw errors.SERVICE_FORBIDDEN(
            principal.service.issuer,
            `${request.method} this route (scope '${scope}' allows ${methods.join(', ')})`,
          );
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
