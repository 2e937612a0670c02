import { createHmac } from 'node:crypto';
import { DEFAULT_USER_TOKEN_AUDIENCE, DEFAULT_USER_TOKEN_ISSUER, DEV_ADMIN_KEY_ID, DEV_ADMIN_SIGNING_KEY } from '@community/config';
import { adminTokenSigner } from '@community/observability';
import type { Canaries } from './canaries';
import type { Rng } from './random';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

function sign(header: Record<string, unknown>, claims: Record<string, unknown>, key: string, hash: 'sha256' | 'sha512' | 'none'): string {
  const body = `${b64(header)}.${b64(claims)}`;
  return `${body}.${hash === 'none' ? '' : createHmac(hash, key).update(body).digest('base64url')}`;
}

/** A user token the apps must accept: HS256 with the shared secret, the default iss/aud, a 10-minute exp. */
export function goodToken(secret: string, sub: string, extra: Record<string, unknown> = {}): string {
  return sign({ alg: 'HS256', typ: 'JWT' }, { sub, iss: DEFAULT_USER_TOKEN_ISSUER, aud: DEFAULT_USER_TOKEN_AUDIENCE, iat: now(), exp: now() + 600, ...extra }, secret, 'sha256');
}

/** An operator's admin token for `audience` (the service called): the development operator, whom the apps' default ADMIN_KEYS trusts. */
export function adminToken(audience: string): string {
  return adminTokenSigner({ signingKey: DEV_ADMIN_SIGNING_KEY, kid: DEV_ADMIN_KEY_ID, audience })();
}

export interface BadAuth {
  kind: string;
  /** The Authorization header value, or undefined for "no header". */
  header: string | undefined;
}

/**
 * The authorization matrix minus its one good cell: every way a caller can fail to prove it is
 * `owner`. `other` is a real user whose valid token must not open `owner`'s inbox.
 */
export function badAuth(rng: Rng, canaries: Canaries, secret: string, owner: string, other: string): BadAuth {
  const kinds: Array<[string, () => string | undefined]> = [
    ['none', () => undefined],
    ['other-user', () => `Bearer ${goodToken(secret, other)}`],
    ['forged-signature', () => `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { sub: owner, iat: now() }, `not-the-secret-${rng.hex(8)}`, 'sha256')}`],
    [
      'forged-admin',
      () => `Bearer ${sign({ alg: 'HS256', typ: 'JWT' }, { sub: other, scope: 'admin', iat: now() }, `wrong-${rng.hex(8)}`, 'sha256')}`,
    ],
    [
      'tampered-payload',
      () => {
        const [h, , s] = goodToken(secret, other).split('.');
        return `Bearer ${h}.${b64({ sub: owner, iat: now() })}.${s}`;
      },
    ],
    ['expired', () => `Bearer ${goodToken(secret, owner, { iat: now() - 7200, exp: now() - rng.int(1, 3600) })}`],
    ['not-yet-valid', () => `Bearer ${goodToken(secret, owner, { nbf: now() + rng.int(600, 3600) })}`],
    ['alg-none', () => `Bearer ${sign({ alg: 'none', typ: 'JWT' }, { sub: owner, iat: now() }, '', 'none')}`],
    ['alg-none-signed', () => `Bearer ${sign({ alg: rng.pick(['none', 'None', 'NONE']) }, { sub: owner }, secret, 'sha256')}`],
    ['alg-hs512', () => `Bearer ${sign({ alg: 'HS512', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha512')}`],
    ['alg-rs256-confusion', () => `Bearer ${sign({ alg: 'RS256', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha256')}`],
    ['alg-es256', () => `Bearer ${sign({ alg: 'ES256', typ: 'JWT' }, { sub: owner, iat: now() }, secret, 'sha256')}`],
    ['no-sub', () => `Bearer ${goodToken(secret, owner, { sub: undefined })}`],
    ['sub-not-string', () => `Bearer ${goodToken(secret, owner, { sub: rng.pick([42, true, null, [owner], { id: owner }]) })}`],
    ['empty-sub', () => `Bearer ${goodToken(secret, '')}`],
    ['canary-token', () => `Bearer ${canaries.token()}`],
    ['basic-scheme', () => `Basic ${Buffer.from(`${owner}:${canaries.token()}`).toString('base64')}`],
    ['bearer-empty', () => rng.pick(['Bearer', 'Bearer ', 'bearer', ''])],
    ['two-parts', () => `Bearer ${b64({ alg: 'HS256' })}.${b64({ sub: owner })}`],
    ['garbage', () => `Bearer ${rng.pick(['a.b.c', '...', 'eyJ.eyJ.x', '%00', 'x'.repeat(rng.int(1, 5000))])}`],
    ['token-in-wrong-header', () => `Token ${goodToken(secret, owner)}`],
  ];
  const [kind, make] = rng.pick(kinds);
  return { kind, header: make() };
}
