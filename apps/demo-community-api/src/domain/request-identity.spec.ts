import {
  IDEMPOTENCY_KEY_MAX_LENGTH,
  idempotencyKeyProblem,
  requestHash,
  stableJson,
  storedKey,
} from './request-identity';

describe('idempotencyKeyProblem', () => {
  it('accepts an absent key and any 1 to 255 visible ASCII characters', () => {
    expect(idempotencyKeyProblem(undefined)).toBeUndefined();
    expect(idempotencyKeyProblem('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBeUndefined();
    expect(idempotencyKeyProblem('!~"quoted"/:;')).toBeUndefined();
    expect(idempotencyKeyProblem('k'.repeat(IDEMPOTENCY_KEY_MAX_LENGTH))).toBeUndefined();
  });

  it('says why an empty, too long, repeated or non-visible-ASCII key is refused', () => {
    expect(idempotencyKeyProblem('')).toBe('it is empty');
    expect(idempotencyKeyProblem('k'.repeat(256))).toBe('it has 256 characters, more than 255');
    expect(idempotencyKeyProblem(['a', 'b'])).toBe('it is sent more than once');
    for (const key of ['two words', 'tab\there', 'caf\u00e9', 'nul\u0000', 'emoji😀', 'del\u007f']) {
      expect([key, idempotencyKeyProblem(key)]).toEqual([key, expect.stringContaining('not visible ASCII')]);
    }
  });
});

describe('stableJson', () => {
  it('serialises objects with their keys sorted, at every depth, and keeps array order', () => {
    expect(stableJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(stableJson({ x: 1, y: 2 })).toBe(stableJson({ y: 2, x: 1 }));
    expect(stableJson([1, 2])).not.toBe(stableJson([2, 1]));
  });

  it('leaves out undefined properties, as JSON does', () => {
    expect(stableJson({ a: undefined, b: 'x' })).toBe('{"b":"x"}');
  });
});

describe('requestHash', () => {
  const comment = {
    method: 'POST',
    route: '/v1/posts/:postId/comments',
    params: { postId: 'p1' },
    body: { body: 'hi', parentCommentId: 'c1' },
  };

  it('is the same for the same request, whatever the order of its fields', () => {
    const reordered = { ...comment, method: 'post', body: { parentCommentId: 'c1', body: 'hi' } };
    expect(requestHash(reordered)).toBe(requestHash(comment));
    expect(requestHash(comment)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs when the method, the route, a param or the body differs', () => {
    const hashes = [
      comment,
      { ...comment, method: 'DELETE' },
      { ...comment, route: '/v1/posts' },
      { ...comment, params: { postId: 'p2' } },
      { ...comment, body: { body: 'hi!', parentCommentId: 'c1' } },
      { ...comment, body: undefined },
    ].map(requestHash);
    expect(new Set(hashes).size).toBe(hashes.length);
  });

  it('treats a missing body and params like empty ones, so a body-less route hashes the same every time', () => {
    const follow = { method: 'POST', route: '/v1/users/:userId/follow', params: { userId: 'ada' }, body: undefined };
    expect(requestHash(follow)).toBe(requestHash({ ...follow, body: null }));
  });
});

describe('storedKey', () => {
  it('keeps a client key and a fingerprint apart by prefix', () => {
    expect(storedKey('abc', 'f'.repeat(64))).toBe('key:abc');
    expect(storedKey(undefined, 'f'.repeat(64))).toBe(`fp:${'f'.repeat(64)}`);
    expect(storedKey(`fp:${'f'.repeat(64)}`, 'f'.repeat(64))).toBe(`key:fp:${'f'.repeat(64)}`);
  });
});
