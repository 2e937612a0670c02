import { createHash } from 'node:crypto';

/**
 * What identifies a write request for producer-side dedup (docs/CONTRACT.md "Producer-side dedup
 * (Idempotency-Key)"): the client's `Idempotency-Key`, checked here, and the request's hash, which
 * tells a retry (same hash) from a key reused for another request (another hash) and, for a client
 * that sends no key, is the key itself (`fp:<hash>`).
 */

/** The longest Idempotency-Key accepted (a UUID is 36; the draft standard's examples are shorter). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Visible ASCII only (%x21-7E): no spaces, no control characters, nothing a proxy might rewrite. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * Why an `Idempotency-Key` header cannot be used, or undefined when it can (an absent header is
 * fine: the request is fingerprinted instead). Node joins a repeated header with ", ", which has a
 * space, so two keys are refused too.
 */
export function idempotencyKeyProblem(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return 'it is sent more than once';
  if (value.length === 0) return 'it is empty';
  if (value.length > IDEMPOTENCY_KEY_MAX_LENGTH)
    return `it has ${value.length} characters, more than ${IDEMPOTENCY_KEY_MAX_LENGTH}`;
  if (!VISIBLE_ASCII.test(value)) return 'it has a character that is not visible ASCII (space, control or non-ASCII)';
  return undefined;
}

/**
 * JSON with every object's keys in sorted order, so the same value always serialises the same way
 * whatever order the client wrote its fields in. Arrays keep their order (it is meaningful).
 */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export interface RequestIdentity {
  method: string;
  /** The route's pattern (`/v1/users/:userId/follow`), not the URL: the params say which user. */
  route: string;
  params: unknown;
  /** As validated: unknown properties already dropped, so they do not make a request "another". */
  body: unknown;
}

/** sha256 (hex) of the request's stable serialisation: the same request always has the same hash. */
export function requestHash(request: RequestIdentity): string {
  const serialised = stableJson([
    request.method.toUpperCase(),
    request.route,
    request.params ?? {},
    request.body ?? null,
  ]);
  return createHash('sha256').update(serialised).digest('hex');
}

/**
 * The stored key: the client's key, or the request's fingerprint when it sent none. The prefixes keep
 * the two apart, so no client key can collide with (or be superseded as) a fingerprint.
 */
export function storedKey(idempotencyKey: string | undefined, hash: string): string {
  return idempotencyKey === undefined ? `fp:${hash}` : `key:${idempotencyKey}`;
}

export const FINGERPRINT_PREFIX = 'fp:';
