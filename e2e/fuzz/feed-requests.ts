import type { Canaries } from './canaries';
import type { Rng } from './random';
import type { BadRequest, RequestContext } from './request-types';
import { enc, INJECTIONS, json } from './strings';
import { adminToken, badAuth, goodToken } from './tokens';

/**
 * Bad requests to feed-service's one public route, `GET /v1/users/:userId/feed` (docs/FEED.md,
 * docs/CONTRACT.md "HTTP contract"): no valid proof, another user's feed, a user id the store
 * cannot hold, limits and cursors the route does not issue, methods it does not serve.
 */
const BAD_LIMITS = ['0', '101', '-1', 'abc', '1.5', '1e3', '99999999999999999999', '', '%00', 'NaN'];

/** Cursors feed-service never issues (its cursor is base64url of `[publishedAt ms, postId]`). */
function badFeedCursor(rng: Rng): string {
  const b64 = (v: unknown) => Buffer.from(json(v)).toString('base64url');
  return rng.pick([
    () => rng.pick(INJECTIONS.filter((s) => s.length > 0)),
    () => b64([-1, rng.uuid()]),
    () => b64([1.5, rng.uuid()]),
    () => b64([Number.MAX_SAFE_INTEGER + 2, rng.uuid()]),
    () => b64(['1', rng.uuid()]),
    () => b64([1, '']),
    () => b64([1, 'a\u0000b']),
    () => b64([1, 'p'.repeat(257)]),
    () => b64([1, rng.uuid(), 3]),
    () => b64({ at: 1, postId: rng.uuid() }),
    () => b64('x'),
    () => Buffer.from([0xff, 0xfe, 0x00]).toString('base64url'),
    () => 'A'.repeat(rng.int(501, 3000)),
  ])();
}

export function feedRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Omit<BadRequest, 'n' | 'app'> {
  const own = `/v1/users/${ctx.owner}/feed`;
  const bearer = { authorization: `Bearer ${goodToken(ctx.secret, ctx.owner)}` };
  const kind = rng.pick(['auth', 'auth', 'path', 'unstorable-user', 'limit', 'cursor', 'method']);
  if (kind === 'auth') {
    const auth = badAuth(rng, canaries, ctx.secret, ctx.owner, ctx.other, { service: 'feed-service' });
    return {
      category: `feed-auth:${auth.kind}`,
      method: 'GET',
      path: own,
      headers: auth.header === undefined ? {} : { authorization: auth.header },
    };
  }
  if (kind === 'path') {
    // The owner's valid token, someone else's feed: 403 FS_FORBIDDEN_USER (or 400 for a bad id).
    const user = enc(
      rng.pick([
        ctx.other,
        canaries.email(),
        rng.pick(INJECTIONS.filter((s) => s.length > 0)),
        `${ctx.owner} `,
        ctx.owner.toUpperCase(),
      ]),
    );
    return { category: 'feed-path:other-user', method: 'GET', path: `/v1/users/${user}/feed`, headers: bearer };
  }
  if (kind === 'unstorable-user') {
    // Authorised for the path (an admin token, or the user's own), but no id the store can hold.
    const user = rng.pick(['a\u0000b', '\u0000', 'u'.repeat(rng.int(257, 1000))]);
    const token = rng.chance(0.5) ? adminToken('feed-service') : goodToken(ctx.secret, user);
    return {
      category: 'feed-unstorable-user',
      method: 'GET',
      path: `/v1/users/${enc(user)}/feed`,
      headers: { authorization: `Bearer ${token}` },
    };
  }
  if (kind === 'limit')
    return {
      category: 'feed-input:limit',
      method: 'GET',
      path: `${own}?limit=${enc(rng.pick(BAD_LIMITS))}`,
      headers: bearer,
    };
  if (kind === 'cursor')
    return {
      category: 'feed-input:cursor',
      method: 'GET',
      path: `${own}?cursor=${enc(badFeedCursor(rng))}`,
      headers: bearer,
    };
  return {
    category: 'feed-method',
    method: rng.pick(['POST', 'PUT', 'DELETE', 'PATCH']),
    path: own,
    headers: { ...bearer, 'content-type': 'application/json' },
    body: json({ items: [] }),
  };
}
