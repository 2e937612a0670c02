import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

/**
 * email-service's service-token key pair (docs/EMAIL.md "Secrets"): Ed25519, PEM. email-service
 * holds the private key (EMAIL_SERVICE_SIGNING_KEY) and signs the opt-out calls it makes;
 * notification-service holds only the public key (EMAIL_SERVICE_VERIFY_KEY), so neither can mint
 * the other's tokens, and neither is an admin token. Well known on purpose, like DEV_JWT_SECRET:
 * a laptop starts without setup, and production refuses both defaults.
 */
export const DEV_EMAIL_SERVICE_SIGNING_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFri3oO4IuM8mDNFXouuVMH3OU1lF4CSVCecO/cVJjnP
-----END PRIVATE KEY-----
`;
export const DEV_EMAIL_SERVICE_VERIFY_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEADiBFE/UIwEbR3bsyCn3mvCjQs3vTz7byBF/JnR62X/k=
-----END PUBLIC KEY-----
`;

/**
 * push-service's service-token key pair (docs/NOTIFICATIONS.md "Delivery timing"): Ed25519, PEM.
 * push-service holds the private key (PUSH_SERVICE_SIGNING_KEY) and signs the read-state checks it
 * makes before a held push; notification-service holds only the public key
 * (PUSH_SERVICE_VERIFY_KEY). A pair of its own, not email-service's, so a leaked key of one sender
 * cannot speak for the other. Well known on purpose, like DEV_JWT_SECRET: a laptop starts without
 * setup, and production refuses both defaults.
 */
export const DEV_PUSH_SERVICE_SIGNING_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIOr81OtxvYJzpZZwCuXeeqDr38ekoDleyQxI+S6J6RxK
-----END PRIVATE KEY-----
`;
export const DEV_PUSH_SERVICE_VERIFY_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAUmZdEeAvQQAY2Z+SQdkFYkGm7dQIFKPVdxBesSKwal0=
-----END PUBLIC KEY-----
`;

/**
 * An Ed25519 key from an environment value: PEM (PKCS#8 private or SPKI public), with real line
 * breaks or `\n` escapes (one-line env files). Throws with the reason when it is not one, so a
 * config loader can name the variable.
 */
export function ed25519Key(kind: 'private' | 'public', value: string): KeyObject {
  const pem = value.includes('\\n') ? value.replace(/\\n/g, '\n') : value;
  // node derives a public key from a private one: refuse it, the verifying side must never hold it.
  if (kind === 'public' && /PRIVATE KEY/.test(pem))
    throw new Error('is a private key; give the public key only (the private key stays with the signing service)');
  let key: KeyObject;
  try {
    key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
  } catch (err) {
    throw new Error(
      `not a PEM ${kind === 'private' ? 'PKCS#8 private' : 'SPKI public'} key (${(err as Error).message})`,
    );
  }
  if (key.type !== kind || key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`expected an Ed25519 ${kind} key, got ${key.asymmetricKeyType ?? 'a symmetric'} ${key.type} key`);
  }
  return key;
}

/** The issue a config loader reports for a bad key variable, or undefined when it parses. */
export function ed25519KeyIssue(
  name: string,
  kind: 'private' | 'public',
  value: string,
): { name: string; message: string } | undefined {
  try {
    ed25519Key(kind, value);
    return undefined;
  } catch (err) {
    return { name, message: `${name}: ${(err as Error).message}` };
  }
}

/**
 * The development operator's private key (ADMIN_KEYS' default entry `dev-operator-1`, common.ts):
 * the ops CLI signs with it outside production when no OPS_ADMIN_KEY_FILE is given. Well known on
 * purpose; production refuses the ADMIN_KEYS default that trusts it.
 */
export const DEV_ADMIN_SIGNING_KEY = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIKopA/E/spznCq9xYeBtt3lxwlFjpNiyT1PzmpX8IkVq
-----END PRIVATE KEY-----
`;

/** One operator's admin key, as a service holds it: who the operator is, and the public half. */
export interface AdminKey {
  /** The JWT header `kid` that selects this key. */
  kid: string;
  /** The operator's identity, recorded in audits (never the token's own claims). */
  operator: string;
  publicKey: KeyObject;
}

const KID = /^[A-Za-z0-9._:-]{1,64}$/;
const validOperator = (o: unknown): o is string =>
  typeof o === 'string' && o.length > 0 && o.length <= 128 && o === o.trim() && !/\p{Cc}/u.test(o);

/** An Ed25519 public key given as PEM (SPKI) or as the base64 of its SPKI DER (the PEM's one line). */
function adminPublicKey(value: string): KeyObject {
  if (value.includes('-----BEGIN')) return ed25519Key('public', value);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) throw new Error('is neither PEM nor base64 SPKI DER');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(value, 'base64'), format: 'der', type: 'spki' });
  } catch (err) {
    throw new Error(`is not a base64 SPKI DER public key (${(err as Error).message})`);
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`expected an Ed25519 public key, got ${key.asymmetricKeyType ?? 'another'} key`);
  return key;
}

/**
 * ADMIN_KEYS: a JSON array of `{"kid", "operator", "publicKey"}` (docs/DEPLOY.md "Admin keys"), at
 * least one entry, each kid once; several entries may name the same operator (a rotation). Throws
 * what is wrong; the config loader prefixes the variable's name.
 */
export function parseAdminKeys(value: string): AdminKey[] {
  const fail = (what: string): never => {
    throw new Error(`${what} (expected a JSON array of {"kid", "operator", "publicKey"}, docs/DEPLOY.md "Admin keys")`);
  };
  let entries: unknown;
  try {
    entries = JSON.parse(value);
  } catch (err) {
    return fail(`is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(entries) || entries.length === 0) return fail('is not a non-empty array');
  const keys: AdminKey[] = [];
  entries.forEach((entry: unknown, i) => {
    const at = `entry ${i}`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return fail(`${at} is not an object`);
    const { kid, operator, publicKey, ...rest } = entry as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) fail(`${at} has unknown field(s) ${extra.join(', ')}`);
    if (typeof kid !== 'string' || !KID.test(kid))
      return fail(`${at}: kid must be 1-64 characters of A-Z a-z 0-9 . _ : -`);
    if (keys.some((k) => k.kid === kid)) return fail(`${at}: kid '${kid}' is listed twice`);
    if (!validOperator(operator))
      return fail(
        `${at} (kid '${kid}'): operator must be 1-128 printable characters, not starting or ending with a space`,
      );
    if (typeof publicKey !== 'string') return fail(`${at} (kid '${kid}'): publicKey is missing`);
    try {
      keys.push({
        kid,
        operator,
        publicKey: adminPublicKey(publicKey.includes('\\n') ? publicKey.replace(/\\n/g, '\n') : publicKey.trim()),
      });
    } catch (err) {
      fail(`${at} (kid '${kid}'): publicKey ${(err as Error).message}`);
    }
  });
  return keys;
}
