import fastifyJwt from '@fastify/jwt';
import { createDecoder, createVerifier } from 'fast-jwt';
import type { FastifyInstance } from 'fastify';
import { parseAdminKeys, type AdminKey } from '@community/config';

// Who a token says the caller is, and the verifiers that decide it (user and operator tokens).

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

export interface RawHeader {
  alg?: unknown;
  kid?: unknown;
}
export interface Claims {
  sub?: unknown;
  scope?: unknown;
  iss?: unknown;
  exp?: unknown;
  iat?: unknown;
}

export const decodeComplete = createDecoder({ complete: true });

/** fast-jwt's refusals as TokenRefused, with its code (clients see e.g. FAST_JWT_EXPIRED as is). */
export function refusal(err: unknown): TokenRefused {
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
export function expiresAtOf(exp: unknown): number | undefined {
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/** `scope` as OAuth writes it ("read admin") or as a JSON array. */
export function scopesOf(scope: unknown): string[] {
  if (typeof scope === 'string') return scope.split(/\s+/).filter(Boolean);
  if (Array.isArray(scope)) return scope.filter((s): s is string => typeof s === 'string');
  return [];
}
