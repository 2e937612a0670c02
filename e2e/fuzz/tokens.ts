import { createHmac, generateKeyPairSync } from 'node:crypto';
import {
  DEFAULT_USER_TOKEN_AUDIENCE,
  DEFAULT_USER_TOKEN_ISSUER,
  DEV_ADMIN_KEY_ID,
  DEV_ADMIN_OPERATOR,
  DEV_ADMIN_SIGNING_KEY,
  DEV_EMAIL_SERVICE_SIGNING_KEY,
} from '@community/config';
import { ADMIN_TOKEN_ISSUER, adminTokenSigner } from '@community/service';
import { craftToken } from '@community/testing';
import type { Canaries } from './canaries';
import type { Rng } from './random';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

function sign(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: string,
  hash: 'sha256' | 'sha512' | 'none',
): string {
  const body = `${b64(header)}.${b64(claims)}`;
  return `${body}.${hash === 'none' ? '' : createHmac(hash, key).update(body).digest('base64url')}`;
}

/** A user token the apps must accept: HS256 with the shared secret, the default iss/aud, a 10-minute exp. */
export function goodToken(secret: string, sub: string, extra: Record<string, unknown> = {}): string {
  return sign(
    { alg: 'HS256', typ: 'JWT' },
    { sub, iss: DEFAULT_USER_TOKEN_ISSUER, aud: DEFAULT_USER_TOKEN_AUDIENCE, iat: now(), exp: now() + 600, ...extra },
    secret,
    'sha256',
  );
}

/** An operator's admin token for `audience` (the service called): the development operator, whom the apps' default ADMIN_KEYS trusts. */
export function adminToken(audience: string): string {
  return adminTokenSigner({ signingKey: DEV_ADMIN_SIGNING_KEY, kid: DEV_ADMIN_KEY_ID, audience })();
}

export interface BadAuth {
  kind: string;
  /** The Authorization header value, or undefined for "no header". */
  header: string | undefined;
  /**
   * Set when the token verifies as a user's (another user than the owner): refused on the owner's
   * resources and on admin routes, but a valid acting user where any user may act (the demo API).
   */
  validUser?: true;
}

export interface BadAuthOptions {
  /** The service called: the `aud` an admin token would need (its other defects are alone in the token). */
  service: string;
  /** The route takes email-service's service token (notification-service's GET/PUT preferences): not sent then. */
  takesEmailServiceToken?: boolean;
}

/** A user token that is valid but for one defect (`extra` replaces or, undefined, removes claims). */
const userWith = (secret: string, sub: string, extra: Record<string, unknown>) =>
  `Bearer ${goodToken(secret, sub, extra)}`;

/** Admin tokens as the ops CLI makes them, from the development operator's key (which the apps' default ADMIN_KEYS trusts), with `claims` changed. */
function adminWith(
  service: string,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
  key: string = DEV_ADMIN_SIGNING_KEY,
): string {
  const full = { iss: ADMIN_TOKEN_ISSUER, aud: service, iat: now(), exp: now() + 600, ...claims };
  return `Bearer ${craftToken({ alg: 'EdDSA', typ: 'JWT', kid: DEV_ADMIN_KEY_ID, ...header }, full, { key })}`;
}

/** email-service's opt-out token (its development key, which notification-service's default EMAIL_SERVICE_VERIFY_KEY trusts), with `claims` changed. */
function serviceWith(claims: Record<string, unknown>, key: string = DEV_EMAIL_SERVICE_SIGNING_KEY): string {
  const full = {
    iss: 'email-service',
    sub: 'email-service',
    aud: 'notification-service',
    scope: 'preferences:opt-out',
    iat: now(),
    exp: now() + 300,
    ...claims,
  };
  return `Bearer ${craftToken({ alg: 'EdDSA', typ: 'JWT' }, full, { key })}`;
}

/** Keys no app knows: an operator's key whose kid is in no ADMIN_KEYS, a service key nobody verifies with. */
const STRANGER_KEYS = Array.from({ length: 3 }, () =>
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);
const OTHER_SERVICES = [
  'notification-service',
  'feed-service',
  'push-service',
  'reconciler',
  'demo-community-api',
  'email-service',
];

/**
 * The authorization matrix minus its good cells: every way a caller can fail to prove it is
 * `owner` or an operator of `service` (docs/SECURITY.md "Authorization matrix"). `other` is a real
 * user whose valid token must not open `owner`'s resources; each admin and service form has exactly
 * one defect, so each of the verifier's checks is what refuses it.
 */
export function badAuth(
  rng: Rng,
  canaries: Canaries,
  secret: string,
  owner: string,
  other: string,
  options: BadAuthOptions,
): BadAuth {
  const [kind, make, validUser] = rng.pick(authForms(rng, canaries, secret, owner, other, options));
  return validUser ? { kind, header: make(), validUser } : { kind, header: make() };
}

/** Every kind `badAuth` sends (the fuzz checks that a full-size run sent each). */
export function badAuthKinds(options: BadAuthOptions): string[] {
  return authForms(undefined as unknown as Rng, undefined as unknown as Canaries, '', '', '', options).map(
    ([kind]) => kind,
  );
}

/** The forms, each made only when picked. */
function authForms(
  rng: Rng,
  canaries: Canaries,
  secret: string,
  owner: string,
  other: string,
  options: BadAuthOptions,
): Array<[string, () => string | undefined, true?]> {
  const { service } = options;
  const elsewhere = () => rng.pick(OTHER_SERVICES.filter((s) => s !== service));
  const kinds: Array<[string, () => string | undefined, true?]> = [
    ['none', () => undefined],
    ['other-user', () => `Bearer ${goodToken(secret, other)}`, true],
    // A user token with the admin scope, validly signed: the scope grants nothing (it used to open everything).
    [
      'user-admin-scope',
      () =>
        userWith(secret, rng.pick([other, DEV_ADMIN_OPERATOR]), {
          scope: rng.pick(['admin', 'read admin', ['admin'], 'admin:all']),
        }),
      true,
    ],
    [
      'forged-signature',
      () =>
        `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { sub: owner, iat: now() }, `not-the-secret-${rng.hex(8)}`, 'sha256')}`,
    ],
    [
      'forged-admin',
      () =>
        `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { sub: other, scope: 'admin', iat: now() }, `wrong-${rng.hex(8)}`, 'sha256')}`,
    ],
    [
      'tampered-payload',
      () => {
        const [h, , s] = goodToken(secret, other).split('.');
        return `Bearer ${h}.${b64({ sub: owner, iss: DEFAULT_USER_TOKEN_ISSUER, aud: DEFAULT_USER_TOKEN_AUDIENCE, iat: now(), exp: now() + 600 })}.${s}`;
      },
    ],
    ['expired', () => `Bearer ${goodToken(secret, owner, { iat: now() - 7200, exp: now() - rng.int(1, 3600) })}`],
    ['not-yet-valid', () => `Bearer ${goodToken(secret, owner, { nbf: now() + rng.int(600, 3600) })}`],
    [
      'user-wrong-aud',
      () =>
        userWith(secret, owner, {
          aud: rng.pick(['another-app', service, ['x', 'y'], '', 'community-notifications ']),
        }),
    ],
    [
      'user-wrong-iss',
      () => userWith(secret, owner, { iss: rng.pick(['elsewhere', ADMIN_TOKEN_ISSUER, '', 'Community-Site']) }),
    ],
    ['user-missing-claim', () => userWith(secret, owner, { [rng.pick(['iss', 'aud', 'exp'])]: undefined })],
    // Longer than USER_TOKEN_MAX_LIFETIME_MS (1 h): by exp - iat, or without iat by exp - now.
    [
      'user-too-long',
      () =>
        userWith(
          secret,
          owner,
          rng.chance(0.5)
            ? { iat: now() - 60, exp: now() + rng.int(3700, 86_400 * 365) }
            : { iat: undefined, exp: now() + rng.int(3700, 86_400) },
        ),
    ],
    ['alg-none', () => `Bearer ${sign({ alg: 'none', typ: 'JWT' }, { sub: owner, iat: now() }, '', 'none')}`],
    [
      'alg-none-signed',
      () => `Bearer ${sign({ alg: rng.pick(['none', 'None', 'NONE']) }, { sub: owner }, secret, 'sha256')}`,
    ],
    ['alg-hs512', () => `Bearer ${sign({ alg: 'HS512', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha512')}`],
    [
      'alg-rs256-confusion',
      () => `Bearer ${sign({ alg: 'RS256', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha256')}`,
    ],
    ['alg-es256', () => `Bearer ${sign({ alg: 'ES256', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha256')}`],
    ['no-sub', () => `Bearer ${goodToken(secret, owner, { sub: undefined })}`],
    [
      'sub-not-string',
      () => `Bearer ${goodToken(secret, owner, { sub: rng.pick([42, true, null, [owner], { id: owner }]) })}`,
    ],
    ['empty-sub', () => `Bearer ${goodToken(secret, '')}`],
    // Operators' tokens, each with one defect.
    ['admin-expired', () => adminWith(service, { iat: now() - 7200, exp: now() - rng.int(1, 3600) })],
    [
      'admin-wrong-aud',
      () => adminWith(service, { aud: rng.pick([elsewhere(), DEFAULT_USER_TOKEN_AUDIENCE, '', [elsewhere()]]) }),
    ],
    [
      'admin-wrong-iss',
      () => adminWith(service, { iss: rng.pick([DEFAULT_USER_TOKEN_ISSUER, 'ops', '', 'Community-Ops']) }),
    ],
    ['admin-missing-claim', () => adminWith(service, { [rng.pick(['iss', 'aud', 'exp'])]: undefined })],
    [
      'admin-too-long',
      () =>
        adminWith(
          service,
          rng.chance(0.5)
            ? { iat: now() - 60, exp: now() + rng.int(3700, 86_400 * 365) }
            : { iat: undefined, exp: now() + rng.int(3700, 86_400) },
        ),
    ],
    ['admin-not-yet-valid', () => adminWith(service, { nbf: now() + rng.int(600, 3600) })],
    // The operator's name comes from the kid; a sub naming anyone else is refused, not re-attributed.
    [
      'admin-sub-mismatch',
      () =>
        adminWith(service, {
          sub: rng.pick([owner, other, 'root', `${DEV_ADMIN_OPERATOR} `, DEV_ADMIN_OPERATOR.toUpperCase()]),
        }),
    ],
    [
      'admin-unsigned',
      () =>
        `Bearer ${craftToken({ alg: rng.pick(['none', 'None']), typ: 'JWT', kid: DEV_ADMIN_KEY_ID }, { iss: ADMIN_TOKEN_ISSUER, aud: service, sub: DEV_ADMIN_OPERATOR, scope: 'admin', iat: now(), exp: now() + 600 })}`,
    ],
    ['admin-empty-signature', () => `${adminWith(service, {}).split('.').slice(0, 2).join('.')}.`],
    [
      'admin-unknown-kid',
      () =>
        adminWith(
          service,
          {},
          { kid: rng.pick([`stranger-${rng.hex(6)}`, 'dev-operator-2', '', '../dev-operator-1']) },
          rng.pick(STRANGER_KEYS),
        ),
    ],
    ['admin-foreign-key', () => adminWith(service, {}, {}, rng.pick(STRANGER_KEYS))],
    [
      'admin-kid-not-string',
      () => adminWith(service, {}, { kid: rng.pick([42, null, [DEV_ADMIN_KEY_ID], { id: DEV_ADMIN_KEY_ID }, true]) }),
    ],
    // JWT_SECRET is every service's: an admin-looking token made with it must not pass as one.
    [
      'admin-hs256-kid',
      () =>
        `Bearer ${craftToken({ alg: 'HS256', typ: 'JWT', kid: DEV_ADMIN_KEY_ID }, { iss: ADMIN_TOKEN_ISSUER, aud: service, sub: DEV_ADMIN_OPERATOR, iat: now(), exp: now() + 600 }, { secret })}`,
    ],
    [
      'admin-tampered',
      () => {
        const [h, , s] = adminToken(elsewhere()).split('.');
        return `Bearer ${h}.${b64({ iss: ADMIN_TOKEN_ISSUER, aud: service, iat: now(), exp: now() + 600 })}.${s}`;
      },
    ],
    // Service tokens: email-service's real one (on a route that does not take it), and forged ones.
    ...(options.takesEmailServiceToken ? [] : [['service-token', () => serviceWith({})] as [string, () => string]]),
    [
      'service-wrong-scope',
      () => serviceWith({ scope: rng.pick(['', 'admin', 'preferences:read', 'preferences:opt-out:all', ['admin']]) }),
    ],
    [
      'service-wrong-aud',
      () => serviceWith({ aud: rng.pick(OTHER_SERVICES.filter((s) => s !== 'notification-service')) }),
    ],
    [
      'service-wrong-iss',
      () => serviceWith({ iss: rng.pick(['demo-community-api', 'community-platform', ADMIN_TOKEN_ISSUER]) }),
    ],
    ['service-expired', () => serviceWith({ iat: now() - 7200, exp: now() - rng.int(1, 3600) })],
    ['service-foreign-key', () => serviceWith({}, rng.pick(STRANGER_KEYS))],
    [
      'service-as-admin',
      () =>
        serviceWith(
          { scope: 'admin', admin: true, sub: DEV_ADMIN_OPERATOR },
          rng.pick([DEV_EMAIL_SERVICE_SIGNING_KEY, ...STRANGER_KEYS]),
        ),
    ],
    ['canary-token', () => `Bearer ${canaries.token()}`],
    ['basic-scheme', () => `Basic ${Buffer.from(`${owner}:${canaries.token()}`).toString('base64')}`],
    ['bearer-empty', () => rng.pick(['Bearer', 'Bearer ', 'bearer', ''])],
    ['two-parts', () => `Bearer ${b64({ alg: 'HS256' })}.${b64({ sub: owner })}`],
    ['garbage', () => `Bearer ${rng.pick(['a.b.c', '...', 'eyJ.eyJ.x', '%00', 'x'.repeat(rng.int(1, 5000))])}`],
    ['token-in-wrong-header', () => `Token ${goodToken(secret, owner)}`],
  ];
  return kinds;
}
