import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { parseAdminKeys } from '@community/config';
import { ADMIN_TOKEN_ISSUER } from './tokens';

// The signers of each kind of token (tools, tests, the calling service) and an operator's key pair.

export function pemOf(key: string | KeyObject, kind: 'private' | 'public'): string {
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
