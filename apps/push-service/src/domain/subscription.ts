/**
 * A browser's PushSubscription as `POST /v1/users/:userId/push-subscriptions` receives it
 * (`subscription.toJSON()`: `{ endpoint, expirationTime, keys: { p256dh, auth } }`), checked by
 * hand so that every 400 says which field is wrong and what is expected (PS_INVALID_SUBSCRIPTION).
 */

export interface BrowserSubscription {
  endpoint: string;
  /** The browser's P-256 public key, uncompressed (65 bytes), base64url. */
  p256dh: string;
  /** The browser's auth secret (16 bytes), base64url. */
  auth: string;
}

export interface EndpointRules {
  /** http:// endpoints on a loopback host are accepted (PUSH_ALLOW_INSECURE_LOCALHOST). */
  allowInsecureLocalhost: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** Longer than any push service's endpoint (FCM's are ~ 200 characters, Mozilla's ~ 300). */
export const ENDPOINT_MAX_LENGTH = 2048;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;
/**
 * A URL as a browser serialises it (PushSubscription.endpoint): printable ASCII only. The URL parser
 * would accept NUL, spaces and line breaks in the raw string, which is what is stored and compared:
 * PostgreSQL refuses NUL in text (a 500), and a lone surrogate would be stored as another string.
 */
const SERIALISED_URL = /^[\x21-\x7e]+$/;

const fail = (message: string): { ok: false; message: string } => ({ ok: false, message });

/** The endpoint alone (DELETE names it too), or why it is not one push-service would send to. */
export function parseEndpoint(value: unknown, rules: EndpointRules): Parsed<string> {
  if (typeof value !== 'string' || value.length === 0) return fail("'endpoint' must be a non-empty string (a URL)");
  if (value.length > ENDPOINT_MAX_LENGTH) return fail(`'endpoint' is longer than ${ENDPOINT_MAX_LENGTH} characters`);
  if (!SERIALISED_URL.test(value)) {
    return fail("'endpoint' must be a serialised URL: printable ASCII, without spaces or control characters");
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail("'endpoint' is not a URL");
  }
  if (url.username || url.password) return fail("'endpoint' must not carry credentials");
  if (url.protocol === 'https:') return { ok: true, value };
  if (url.protocol === 'http:' && rules.allowInsecureLocalhost && LOOPBACK.has(url.hostname)) {
    return { ok: true, value };
  }
  return fail(
    rules.allowInsecureLocalhost
      ? "'endpoint' must be an https URL (http only on localhost, 127.0.0.1 or ::1)"
      : "'endpoint' must be an https URL",
  );
}

/** The bytes of a base64url string (padding tolerated), or undefined. */
function decode(value: unknown): Buffer | undefined {
  if (typeof value !== 'string' || !BASE64URL.test(value)) return undefined;
  return Buffer.from(value.replace(/=+$/, ''), 'base64url');
}

export function parseSubscription(body: unknown, rules: EndpointRules): Parsed<BrowserSubscription> {
  if (!isObject(body)) {
    return fail('body must be a JSON object: the PushSubscription, { "endpoint", "keys": { "p256dh", "auth" } }');
  }
  const unknown = Object.keys(body).find((k) => !['endpoint', 'expirationTime', 'keys'].includes(k));
  if (unknown !== undefined) {
    return fail(`unknown field '${unknown}' (expected endpoint, expirationTime, keys)`);
  }
  const endpoint = parseEndpoint(body.endpoint, rules);
  if (!endpoint.ok) return endpoint;
  if (body.expirationTime !== undefined && body.expirationTime !== null && typeof body.expirationTime !== 'number') {
    return fail("'expirationTime' must be null or a number");
  }
  const keys = body.keys;
  if (!isObject(keys)) return fail("'keys' must be an object with 'p256dh' and 'auth'");
  const p256dh = decode(keys.p256dh);
  if (!p256dh || p256dh.length !== 65 || p256dh[0] !== 0x04) {
    return fail("'keys.p256dh' must be the browser's P-256 public key: 65 bytes (uncompressed), base64url");
  }
  const auth = decode(keys.auth);
  if (!auth || auth.length !== 16) return fail("'keys.auth' must be the browser's auth secret: 16 bytes, base64url");
  // Stored as the browser sent them, without padding: web-push decodes base64url either way.
  return {
    ok: true,
    value: {
      endpoint: endpoint.value,
      p256dh: (keys.p256dh as string).replace(/=+$/, ''),
      auth: (keys.auth as string).replace(/=+$/, ''),
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
