import { createECDH } from 'node:crypto';
import type { Canaries } from './canaries';
import type { Rng } from './random';
import type { BadRequest, RequestContext } from './request-types';
import { enc, INJECTIONS, json } from './strings';
import { adminToken, badAuth, goodToken } from './tokens';

/**
 * Bad requests to push-service's subscriptions API (docs/PUSH.md "Subscriptions API"):
 * `POST`/`DELETE /v1/users/:userId/push-subscriptions` without a valid proof, on another user's
 * path, for a user id the store cannot hold, and with subscriptions the API refuses (no keys, keys
 * of the wrong size or alphabet, an endpoint that is no https URL, too long, or with bytes no
 * browser sends, wrong types, unknown fields, bodies that are no JSON object or too large). None is
 * a valid request: a POST never carries a subscription the API would store, and a DELETE never names
 * an endpoint it would accept (which answers 204 whether or not it was there). The fuzz runs
 * push-service without PUSH_ALLOW_INSECURE_LOCALHOST, so an http endpoint is refused on POST; DELETE
 * accepts http on a loopback host, so none is sent there.
 */
const HOSTILE = INJECTIONS.filter((s) => s.length > 0);

/** A browser's P-256 public key (uncompressed, base64url), from a fixed private key: the run stays replayable. */
const P256DH = (() => {
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(Buffer.alloc(32, 7));
  return ecdh.getPublicKey().toString('base64url');
})();

/** `n` bytes from the run's generator. */
const bytes = (rng: Rng, n: number) => Buffer.from(rng.hex(2 * n), 'hex');

/** A browser's keys as `PushSubscription.toJSON()` has them: the API accepts these. */
function goodKeys(rng: Rng): { p256dh: string; auth: string } {
  return { p256dh: P256DH, auth: bytes(rng, 16).toString('base64url') };
}

/** An https endpoint the API would accept: only ever sent with something else wrong. */
const goodEndpoint = (rng: Rng) => `https://push.example/send/${rng.hex(24)}`;

/** Endpoints the API refuses, on POST and DELETE alike (no loopback http: DELETE takes it). */
function badEndpoint(rng: Rng, canaries: Canaries): unknown {
  return rng.pick<() => unknown>([
    () => '',
    () => `http://push.example/send/${rng.hex(8)}`,
    () =>
      rng.pick([
        'ftp://push.example/x',
        'javascript:alert(1)',
        'data:text/plain,x',
        'file:///etc/passwd',
        'ws://push.example/x',
      ]),
    () =>
      rng.pick(['push.example/send/x', '/send/x', '//push.example/x', 'https://', 'https//push.example', 'not a url']),
    () => `https://u:${canaries.token()}@push.example/x`,
    () => `https://push.example/${'p'.repeat(rng.int(2049, 6000))}`,
    // Bytes the URL parser would take but no browser serialises (NUL reached PostgreSQL once).
    () =>
      `https://push.example/${rng.pick(['a\u0000b', '\u0000', 'a\nb', 'a b', 'tail\ud800', '\udc00', 'é', '\u202e'])}`,
    () => ` ${goodEndpoint(rng)}`,
    () => rng.pick(HOSTILE),
    () => rng.pick([42, true, null, [goodEndpoint(rng)], { url: goodEndpoint(rng) }]),
  ])();
}

/** Subscriptions POST refuses (PS_INVALID_SUBSCRIPTION), each with one defect. */
function badSubscription(rng: Rng, canaries: Canaries): [string, unknown] {
  const endpoint = goodEndpoint(rng);
  const keys = goodKeys(rng);
  const b64 = (n: number) => bytes(rng, n).toString('base64url');
  return rng.pick<() => [string, unknown]>([
    () => ['endpoint', { endpoint: badEndpoint(rng, canaries), keys }],
    () => ['no-endpoint', { keys }],
    () => ['no-keys', { endpoint, expirationTime: null }],
    () => ['keys-type', { endpoint, keys: rng.pick([null, 'keys', 42, [keys.p256dh, keys.auth]]) }],
    () => ['no-p256dh', { endpoint, keys: { auth: keys.auth } }],
    () => ['no-auth', { endpoint, keys: { p256dh: keys.p256dh } }],
    () => [
      'p256dh',
      {
        endpoint,
        keys: {
          ...keys,
          p256dh: rng.pick<() => unknown>([
            () => b64(rng.int(1, 64)),
            () => b64(66),
            // 65 bytes, but no uncompressed point (its first byte is not 0x04).
            () => Buffer.concat([Buffer.from([0x02]), bytes(rng, 64)]).toString('base64url'),
            // base64, not base64url ('+' is outside the alphabet).
            () => `${keys.p256dh.slice(0, -1)}+`,
            () => `${keys.p256dh}!`,
            () => rng.pick(HOSTILE),
            () => rng.pick([42, null, [keys.p256dh], { k: keys.p256dh }]),
          ])(),
        },
      },
    ],
    () => [
      'auth',
      {
        endpoint,
        keys: {
          ...keys,
          auth: rng.pick<() => unknown>([
            () => b64(rng.pick([1, 8, 15, 17, 32])),
            () => canaries.token(),
            () => 'a+b/c+d/e+f/g+h/ij==',
            () => rng.pick(HOSTILE),
            () => rng.pick([16, true, null, [keys.auth]]),
          ])(),
        },
      },
    ],
    () => ['expiration-time', { endpoint, keys, expirationTime: rng.pick(['tomorrow', '1', true, [], {}]) }],
    () => ['unknown-field', { endpoint, keys, [rng.pick(['userId', 'id', '__proto__x', 'options', 'extra'])]: 1 }],
    () => ['not-an-object', rng.pick([[], [{ endpoint, keys }], 'subscription', 42, null, true])],
  ])();
}

type Made = Omit<BadRequest, 'n' | 'app'>;

export function pushRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Made {
  const own = `/v1/users/${ctx.owner}/push-subscriptions`;
  const bearer = { authorization: `Bearer ${goodToken(ctx.secret, ctx.owner)}` };
  const jsonHeaders = (h: Record<string, string>) => ({ ...h, 'content-type': 'application/json' });
  const method = rng.pick(['POST', 'DELETE']);
  // What a valid caller would send: a browser's subscription, or the endpoint to remove.
  const goodBody = () =>
    json(
      method === 'POST'
        ? { endpoint: goodEndpoint(rng), expirationTime: null, keys: goodKeys(rng) }
        : { endpoint: goodEndpoint(rng) },
    );
  const kind = rng.pick([
    'auth',
    'auth',
    'path',
    'unstorable-user',
    'subscription',
    'subscription',
    'delete',
    'body',
    'method',
  ]);

  if (kind === 'auth') {
    // Mostly the owner's own path, sometimes someone else's: either way, no valid proof.
    const user = rng.chance(0.8) ? ctx.owner : enc(rng.pick([canaries.email(), rng.pick(HOSTILE)]));
    const auth = badAuth(rng, canaries, ctx.secret, ctx.owner, ctx.other, { service: 'push-service' });
    return {
      category: `push-auth:${auth.kind}:${method}`,
      method,
      path: `/v1/users/${user}/push-subscriptions`,
      headers: jsonHeaders(auth.header === undefined ? {} : { authorization: auth.header }),
      body: goodBody(),
    };
  }
  if (kind === 'path') {
    // The owner's valid token, another user's subscriptions: 403 PS_FORBIDDEN_USER (or 400/404 for a bad id).
    const user = enc(
      rng.pick([ctx.other, canaries.email(), rng.pick(HOSTILE), `${ctx.owner} `, ctx.owner.toUpperCase()]),
    );
    return {
      category: `push-path:${method}`,
      method,
      path: `/v1/users/${user}/push-subscriptions`,
      headers: jsonHeaders(bearer),
      body: goodBody(),
    };
  }
  if (kind === 'unstorable-user') {
    // Authorised for the path (an admin token, or the user's own), but no id the store can hold.
    const user = rng.pick(['a\u0000b', '\u0000', 'u'.repeat(rng.int(257, 1000))]);
    const token = rng.chance(0.5) ? adminToken('push-service') : goodToken(ctx.secret, user);
    return {
      category: `push-unstorable-user:${method}`,
      method,
      path: `/v1/users/${enc(user)}/push-subscriptions`,
      headers: jsonHeaders({ authorization: `Bearer ${token}` }),
      body: goodBody(),
    };
  }
  if (kind === 'subscription') {
    // The owner's own token (or an operator's), a subscription with one defect: 400 PS_INVALID_SUBSCRIPTION.
    const [defect, body] = badSubscription(rng, canaries);
    const auth = rng.chance(0.8) ? bearer : { authorization: `Bearer ${adminToken('push-service')}` };
    return {
      category: `push-subscription:${defect}`,
      method: 'POST',
      path: own,
      headers: jsonHeaders(auth),
      body: json(body),
    };
  }
  if (kind === 'delete') {
    // No endpoint named, or one the API could never have stored: 400, never a 204.
    const endpoint = badEndpoint(rng, canaries);
    return rng.pick<() => Made>([
      () => ({ category: 'push-delete:none', method: 'DELETE', path: own, headers: bearer }),
      () => ({
        category: 'push-delete:body',
        method: 'DELETE',
        path: own,
        headers: jsonHeaders(bearer),
        body: json(rng.pick([{ endpoint }, {}, [], { url: goodEndpoint(rng) }, 'x', null])),
      }),
      () => ({
        category: 'push-delete:query',
        method: 'DELETE',
        path: `${own}?endpoint=${typeof endpoint === 'string' ? enc(endpoint) : enc(json(endpoint))}`,
        headers: bearer,
      }),
      () => ({
        category: 'push-delete:two-queries',
        method: 'DELETE',
        path: `${own}?endpoint=${enc(goodEndpoint(rng))}&endpoint=${enc(goodEndpoint(rng))}`,
        headers: bearer,
      }),
    ])();
  }
  if (kind === 'body') {
    const good = json({ endpoint: goodEndpoint(rng), expirationTime: null, keys: goodKeys(rng) });
    return rng.pick<() => Made>([
      () => ({
        category: 'push-body:content-type',
        method,
        path: own,
        headers: {
          ...bearer,
          'content-type': rng.pick(['text/plain', 'application/xml', 'multipart/form-data; boundary=x']),
        },
        body: good,
      }),
      () => ({
        category: 'push-body:malformed',
        method,
        path: own,
        headers: jsonHeaders(bearer),
        body: good.slice(0, rng.int(1, good.length - 1)),
      }),
      () => ({ category: 'push-body:empty-json', method, path: own, headers: jsonHeaders(bearer), body: '' }),
      // Past fastify's default 1 MiB body limit: 413.
      () => ({
        category: 'push-body:oversized',
        method,
        path: own,
        headers: jsonHeaders(bearer),
        body: json({ endpoint: goodEndpoint(rng), keys: goodKeys(rng), pad: 'x'.repeat(1_100_000) }),
      }),
      () => {
        const depth = rng.int(1_000, 50_000);
        return {
          category: 'push-body:deep',
          method: 'POST',
          path: own,
          headers: jsonHeaders(bearer),
          body: `{"endpoint":"${goodEndpoint(rng)}","keys":${'['.repeat(depth)}{}${']'.repeat(depth)}}`,
        };
      },
    ])();
  }
  // Methods and routes push-service does not serve: 404.
  return rng.pick<() => Made>([
    () => ({
      category: 'push-method:subscriptions',
      method: rng.pick(['GET', 'PUT', 'PATCH']),
      path: own,
      headers: jsonHeaders(bearer),
      body: undefined,
    }),
    () => ({
      category: 'push-method:vapid-key',
      method: rng.pick(['POST', 'PUT', 'DELETE']),
      path: '/v1/push/vapid-public-key',
      headers: jsonHeaders(bearer),
      body: json({ publicKey: canaries.token() }),
    }),
    () => ({
      category: 'push-method:page',
      method: rng.pick(['POST', 'PUT', 'DELETE']),
      path: rng.pick(['/push/', '/push/page.js', '/push/sw.js', '/push/page.css']),
      headers: {},
    }),
    () => ({
      category: 'push-route:unknown',
      method: 'GET',
      path: rng.pick([
        `/push/${enc(rng.pick(HOSTILE))}`,
        '/push/../openapi.json/x',
        `/v1/users/${ctx.owner}/push-subscriptions/${rng.hex(8)}`,
        '/push',
      ]),
      headers: bearer,
    }),
  ])();
}
