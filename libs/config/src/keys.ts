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
 * An Ed25519 key from an environment value: PEM (PKCS#8 private or SPKI public), with real line
 * breaks or `\n` escapes (one-line env files). Throws with the reason when it is not one, so a
 * config loader can name the variable.
 */
export function ed25519Key(kind: 'private' | 'public', value: string): KeyObject {
  const pem = value.includes('\\n') ? value.replace(/\\n/g, '\n') : value;
  // node derives a public key from a private one: refuse it, the verifying side must never hold it.
  if (kind === 'public' && /PRIVATE KEY/.test(pem)) throw new Error('is a private key; give the public key only (the private key stays with the signing service)');
  let key: KeyObject;
  try {
    key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
  } catch (err) {
    throw new Error(`not a PEM ${kind === 'private' ? 'PKCS#8 private' : 'SPKI public'} key (${(err as Error).message})`);
  }
  if (key.type !== kind || key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`expected an Ed25519 ${kind} key, got ${key.asymmetricKeyType ?? 'a symmetric'} ${key.type} key`);
  }
  return key;
}

/** The issue a config loader reports for a bad key variable, or undefined when it parses. */
export function ed25519KeyIssue(name: string, kind: 'private' | 'public', value: string): { name: string; message: string } | undefined {
  try {
    ed25519Key(kind, value);
    return undefined;
  } catch (err) {
    return { name, message: `${name}: ${(err as Error).message}` };
  }
}
