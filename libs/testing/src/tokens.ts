import { createHmac, sign as cryptoSign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { adminTokenSigner, generateOperatorKey } from '@community/service';

/**
 * Operators with keys of their own, for a test's ADMIN_KEYS: the harnesses mint admin tokens as an
 * operator would (EdDSA, their own key, the kid the service binds to them), so a test asserts the
 * identity the service verified, not one the token claimed.
 */
export interface TestOperators {
  /** The ADMIN_KEYS value that trusts every one of them. */
  adminKeys: string;
  /** `name`'s admin token for `audience` (the called service's name). */
  token(name: string, audience: string, ttlMs?: number): string;
  /** `name`'s kid and private key (PKCS#8 PEM): what the ops CLI is given (OPS_ADMIN_KEY_ID, OPS_ADMIN_KEY_FILE). */
  key(name: string): { kid: string; privateKeyPem: string };
  /** The ops CLI's environment for `name`: their private key written to a file only they read, and its kid. */
  cliEnv(name: string): { OPS_ADMIN_KEY_FILE: string; OPS_ADMIN_KEY_ID: string };
}

/** The operators the harnesses trust by default; admin tokens name one of these. */
export const TEST_OPERATOR_NAMES = [
  'alice',
  'bob',
  'carol',
  'dave',
  'erin',
  'frank',
  'operator',
  'volunteer',
  'u-ops',
] as const;

export function testOperators(names: readonly string[] = TEST_OPERATOR_NAMES): TestOperators {
  const keys = new Map(names.map((name) => [name, generateOperatorKey(name, `${name}-test-1`)]));
  const of = (name: string) => {
    const k = keys.get(name);
    if (!k)
      throw new Error(
        `no test operator '${name}' (known: ${[...keys.keys()].join(', ')}); add it to the harness's operators`,
      );
    return k;
  };
  return {
    adminKeys: JSON.stringify([...keys.values()].map((k) => k.entry)),
    token: (name, audience, ttlMs) =>
      adminTokenSigner({ signingKey: of(name).privateKeyPem, kid: of(name).entry.kid, audience, ttlMs })(),
    key: (name) => ({ kid: of(name).entry.kid, privateKeyPem: of(name).privateKeyPem }),
    cliEnv(name) {
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'ops-key-')), `${name}.pem`);
      writeFileSync(file, of(name).privateKeyPem, { mode: 0o600 });
      return { OPS_ADMIN_KEY_FILE: file, OPS_ADMIN_KEY_ID: of(name).entry.kid };
    },
  };
}

const b64 = (v: object): string => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A JWT with exactly these header and claims: HS* with `secret`, EdDSA with `key`, `none` unsigned. */
export function craftToken(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  signing: { secret?: string; key?: string } = {},
): string {
  const head = `${b64(header)}.${b64(claims)}`;
  if (header.alg === 'none') return `${head}.`;
  if (header.alg === 'EdDSA')
    return `${head}.${cryptoSign(null, Buffer.from(head), signing.key ?? '').toString('base64url')}`;
  const hash = header.alg === 'HS512' ? 'sha512' : 'sha256';
  return `${head}.${createHmac(hash, signing.secret ?? '')
    .update(head)
    .digest('base64url')}`;
}

/** How a service answers a token form: no principal, a user (the owner or someone else), or an operator. */
export type TokenFormKind = 'invalid' | 'owner' | 'other-user' | 'other-user-with-admin-scope' | 'operator';

export interface TokenFormOptions {
  /** JWT_SECRET and the user tokens' iss/aud (the development defaults unless set). */
  secret: string;
  issuer?: string;
  audience?: string;
  /** The service called: its admin tokens' `aud`. */
  service: string;
  operators: TestOperators;
  /** One of `operators`, the operator of the valid admin token. */
  operator?: string;
  /** The user whose resource is called. */
  owner: string;
}

/**
 * Every form of bearer token a caller may send (docs/CONTRACT.md "HTTP contract"), each with what it
 * is: a route's auth test maps the kind to its status. Lifetimes assume the default maximums
 * (USER_TOKEN_MAX_LIFETIME_MS and ADMIN_TOKEN_MAX_LIFETIME_MS, 1 h).
 */
export function tokenForms(o: TokenFormOptions): Array<[string, TokenFormKind, string | undefined]> {
  const now = Math.floor(Date.now() / 1000);
  const iss = o.issuer ?? 'community-site';
  const aud = o.audience ?? 'community-notifications';
  const user = (claims: Record<string, unknown>, secret = o.secret, alg = 'HS256') =>
    `Bearer ${craftToken({ alg, typ: 'JWT' }, claims, { secret })}`;
  const valid = (sub: string, extra: Record<string, unknown> = {}) => ({
    sub,
    iss,
    aud,
    iat: now,
    exp: now + 600,
    ...extra,
  });
  const operator = o.operator ?? 'u-ops';
  const { kid, privateKeyPem } = o.operators.key(operator);
  const otherOperator = [...TEST_OPERATOR_NAMES].find((n) => n !== operator) ?? 'alice';
  const admin = (claims: Record<string, unknown>, header: Record<string, unknown> = {}, key = privateKeyPem) =>
    `Bearer ${craftToken({ alg: 'EdDSA', typ: 'JWT', kid, ...header }, claims, { key })}`;
  const adminClaims = (extra: Record<string, unknown> = {}) => ({
    iss: 'community-ops',
    aud: o.service,
    iat: now,
    exp: now + 600,
    ...extra,
  });
  return [
    ['no Authorization header', 'invalid', undefined],
    ['a malformed header', 'invalid', 'Token abc'],
    ['a garbage token', 'invalid', 'Bearer not.a.jwt'],
    [
      'a user token signed with another secret',
      'invalid',
      user(valid(o.owner), 'someone-elses-secret-0123456789-abcdef'),
    ],
    ['an expired user token', 'invalid', user(valid(o.owner, { iat: now - 700, exp: now - 60 }))],
    ['a user token without exp', 'invalid', user(valid(o.owner, { exp: undefined }))],
    ['a user token of another issuer', 'invalid', user(valid(o.owner, { iss: 'elsewhere' }))],
    ['a user token without iss', 'invalid', user(valid(o.owner, { iss: undefined }))],
    ['a user token for another audience', 'invalid', user(valid(o.owner, { aud: 'another-app' }))],
    [
      'a user token minted to live 2 h (exp - iat)',
      'invalid',
      user(valid(o.owner, { iat: now - 60, exp: now + 7140 })),
    ],
    ['a user token without iat expiring in 2 h', 'invalid', user(valid(o.owner, { iat: undefined, exp: now + 7200 }))],
    ['an unsigned user token (alg none)', 'invalid', user(valid(o.owner, { scope: 'admin' }), o.secret, 'none')],
    ['a user token signed with HS512', 'invalid', user(valid(o.owner), o.secret, 'HS512')],
    ['a user token without sub', 'invalid', user(valid('', { sub: undefined, scope: 'admin' }))],
    ['another user', 'other-user', user(valid('u-intruder', { scope: 'read write' }))],
    [
      'another user whose HS256 token has the admin scope',
      'other-user-with-admin-scope',
      user(valid('u-ops', { scope: 'read admin' })),
    ],
    [
      'another user whose HS256 token has the admin scope (array)',
      'other-user-with-admin-scope',
      user(valid('u-ops', { scope: ['admin'] })),
    ],
    ['the owner', 'owner', user(valid(o.owner))],
    ['the owner, token without iat expiring in 10 min', 'owner', user(valid(o.owner, { iat: undefined }))],
    ['an admin token with an unknown kid', 'invalid', admin(adminClaims(), { kid: 'nobody-1' })],
    [
      'an admin token signed with another key than its kid',
      'invalid',
      admin(adminClaims(), {}, o.operators.key(otherOperator).privateKeyPem),
    ],
    ['an expired admin token', 'invalid', admin(adminClaims({ iat: now - 700, exp: now - 60 }))],
    ['an admin token without exp', 'invalid', admin(adminClaims({ exp: undefined }))],
    ['an admin token for another service', 'invalid', admin(adminClaims({ aud: 'another-service' }))],
    ['an admin token of another issuer', 'invalid', admin(adminClaims({ iss: 'community-site' }))],
    ['an admin token minted to live 2 h', 'invalid', admin(adminClaims({ exp: now + 7140, iat: now - 60 }))],
    ['an admin token whose sub names another operator', 'invalid', admin(adminClaims({ sub: otherOperator }))],
    [
      'an unsigned admin token (alg none)',
      'invalid',
      `Bearer ${craftToken({ alg: 'none', kid }, adminClaims({ sub: operator, scope: 'admin' }))}`,
    ],
    [
      'an admin token signed with JWT_SECRET (HS256 with a kid)',
      'invalid',
      `Bearer ${craftToken({ alg: 'HS256', kid }, adminClaims({ sub: operator }), { secret: o.secret })}`,
    ],
    ['an operator (admin token, own key)', 'operator', `Bearer ${o.operators.token(operator, o.service)}`],
    ['an operator whose token names them in sub', 'operator', admin(adminClaims({ sub: operator }))],
  ];
}
