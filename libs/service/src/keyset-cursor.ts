/**
 * The opaque page cursor of the HTTP APIs' keyset pagination (notification-service's inbox,
 * feed-service's feed): base64url of the JSON pair `[n, id]`, the sort key of a page's last row,
 * where `n` is a non-negative safe integer (a version, a timestamp) and `id` the tie-breaker. One
 * codec, so every API refuses a forged or truncated cursor the same way (`decode` → undefined,
 * which the routes answer with 400); each service says what its two parts are and which ids it issues.
 */
export interface KeysetCodec<K> {
  encode(key: K): string;
  /** undefined when the text is not a cursor this codec issued (the caller answers 400). */
  decode(text: string): K | undefined;
}

export function keysetCodec<K>(o: {
  parts(key: K): [number, string];
  key(n: number, id: string): K;
  /** The ids this service issues (a uuid, a bounded string): anything else is not its cursor. */
  validId(id: string): boolean;
}): KeysetCodec<K> {
  return {
    encode: (key) => Buffer.from(JSON.stringify(o.parts(key))).toString('base64url'),
    decode(text) {
      let value: unknown;
      try {
        value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
      } catch {
        return undefined;
      }
      if (!Array.isArray(value) || value.length !== 2) return undefined;
      const [n, id] = value as unknown[];
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return undefined;
      if (typeof id !== 'string' || !o.validId(id)) return undefined;
      return o.key(n, id);
    },
  };
}
