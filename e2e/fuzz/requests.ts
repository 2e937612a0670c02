import type { Canaries } from './canaries';
import type { Rng } from './random';
import { APP_NAMES, type AppName, type BadRequest, type RequestContext } from './request-types';
import { enc, HEADER_SAFE, INJECTIONS, json } from './strings';
import { apiRequest } from './api-requests';
import { feedRequest } from './feed-requests';
import { pushRequest } from './push-requests';
import { rawRequest } from './raw-requests';
import { reconcilerRequest } from './reconciler-requests';
import { adminToken, badAuth, goodToken } from './tokens';

/**
 * Bad HTTP requests against the public HTTP API of the apps (docs/CONTRACT.md "HTTP contract",
 * the demo API's routes, feed-service's feed, push-service's subscriptions API, the reconciler's
 * admin API and DLQ console). Every request is bad by construction: whatever the app, the answer
 * must be a 4xx with a reason, never a 5xx and never a success.
 */
export { APP_NAMES, type AppName, type BadRequest, type RequestContext };

const bearer = (ctx: RequestContext, sub = ctx.owner) => ({ authorization: `Bearer ${goodToken(ctx.secret, sub)}` });

// ---- notification-service --------------------------------------------------------------------------
type Endpoint = { name: string; method: string; path: (user: string, rng: Rng) => string; body?: string };
const INBOX_ENDPOINTS: Endpoint[] = [
  { name: 'list', method: 'GET', path: (u) => `/v1/users/${u}/notifications` },
  { name: 'unread-count', method: 'GET', path: (u) => `/v1/users/${u}/notifications/unread-count` },
  { name: 'read', method: 'POST', path: (u, r) => `/v1/users/${u}/notifications/${r.uuid()}/read` },
  { name: 'unread', method: 'POST', path: (u, r) => `/v1/users/${u}/notifications/${r.uuid()}/unread` },
  { name: 'read-all', method: 'POST', path: (u) => `/v1/users/${u}/notifications/read-all` },
  { name: 'stream', method: 'GET', path: (u) => `/v1/users/${u}/notifications/stream` },
  { name: 'preferences-get', method: 'GET', path: (u) => `/v1/users/${u}/preferences` },
  {
    name: 'preferences-put',
    method: 'PUT',
    path: (u) => `/v1/users/${u}/preferences`,
    body: json({ preferences: { mention: { email: 'off' } } }),
  },
];

const BAD_LIMITS = ['0', '101', '-1', 'abc', '1.5', '1e3', '99999999999999999999', '', '%00', 'NaN'];
const BAD_VERSION_BODIES = [
  '[]',
  '"x"',
  '42',
  'true',
  json({ version: -1 }),
  json({ version: '1' }),
  json({ version: 1.5 }),
  json({ extra: 1 }),
  json({ version: 1, x: 2 }),
  '{"version":1e400}',
];
const BAD_PREFERENCES = [
  {},
  { x: 1 },
  { preferences: [] },
  { preferences: 'all' },
  { preferences: { bogus: {} } },
  { preferences: { mention: { email: 'weekly' } } },
  { preferences: { mention: { inApp: 'yes' } } },
  { preferences: { mention: { sms: true } } },
  { preferences: { mention: { push: 'yes' } } },
  { preferences: { mention: null } },
  { preferences: { security_alert: { email: 'off' } } },
  { preferences: { security_alert: { inApp: false } } },
  { preferences: { mention: { email: 'off' } }, extra: true },
  [],
  'string',
];

function badCursor(rng: Rng): string {
  const b64 = (v: unknown) => Buffer.from(json(v)).toString('base64url');
  return rng.pick([
    () => rng.pick(INJECTIONS),
    () => b64([1, 'not-a-uuid']),
    () => b64([-1, rng.uuid()]),
    () => b64([1.5, rng.uuid()]),
    () => b64({ version: 1, id: rng.uuid() }),
    () => b64([1, rng.uuid(), 3]),
    () => b64('x'),
    () => Buffer.from([0xff, 0xfe, 0x00]).toString('base64url'),
    () => 'A'.repeat(rng.int(501, 3000)),
    () => rng.hex(rng.int(1, 40)),
  ])();
}

function inboxRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Omit<BadRequest, 'n' | 'app'> {
  const ep = rng.pick(INBOX_ENDPOINTS);
  const category = rng.pick(['auth', 'auth', 'auth', 'input', 'input', 'body', 'path', 'unstorable-user']);
  const withBody = (body: string | undefined, type = 'application/json') =>
    body === undefined ? {} : { body, ctype: type };

  if (category === 'auth') {
    // Mostly the owner's own inbox, sometimes someone else's path: either way, no valid proof.
    const user = rng.chance(0.8) ? ctx.owner : enc(rng.pick([canaries.email(), rng.pick(INJECTIONS)]));
    const auth = badAuth(rng, canaries, ctx.secret, ctx.owner, ctx.other, {
      service: 'notification-service',
      takesEmailServiceToken: ep.name.startsWith('preferences-'),
    });
    const b = withBody(ep.body);
    return {
      category: `auth:${auth.kind}:${ep.name}`,
      method: ep.method,
      path: ep.path(user, rng),
      headers: {
        ...(auth.header === undefined ? {} : { authorization: auth.header }),
        ...('ctype' in b ? { 'content-type': b.ctype } : {}),
      },
      body: b.body,
    };
  }
  if (category === 'unstorable-user') {
    // Authorised for the path (an admin token, or the user's own token), but the user id is no
    // text the store can hold or a longer one than the API accepts: 400, never a database error.
    const user = rng.pick(['a\u0000b', '\u0000', 'tail\ud800', '\udc00', 'u'.repeat(rng.int(257, 1000))]);
    const token = rng.chance(0.5) ? adminToken('notification-service') : goodToken(ctx.secret, user);
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (ep.body !== undefined) headers['content-type'] = 'application/json';
    return {
      category: `unstorable-user:${ep.name}`,
      method: ep.method,
      path: ep.path(enc(user), rng),
      headers,
      body: ep.body,
    };
  }
  if (category === 'path') {
    // The owner's valid token, another inbox in the path (or a hostile one): 403, or 400/404.
    const user = enc(
      rng.pick([ctx.other, canaries.email(), rng.pick(INJECTIONS), `${ctx.owner} `, ctx.owner.toUpperCase()]),
    );
    const path = rng.chance(0.5)
      ? ep.path(user, rng)
      : `/v1/users/${rng.pick([enc(ctx.owner)])}/notifications/${enc(rng.pick(INJECTIONS))}/${rng.pick(['read', 'unread'])}`;
    return {
      category: `path:${ep.name}`,
      method: path.endsWith('read') ? 'POST' : ep.method,
      path,
      headers: { ...bearer(ctx), ...(ep.body ? { 'content-type': 'application/json' } : {}) },
      body: path.endsWith('read') ? undefined : ep.body,
    };
  }
  const auth = bearer(ctx);
  if (category === 'input') {
    const kind = rng.pick(['limit', 'cursor', 'unreadOnly', 'unknown-id', 'last-event-id']);
    if (kind === 'limit')
      return {
        category: 'input:limit',
        method: 'GET',
        path: `/v1/users/${ctx.owner}/notifications?limit=${enc(rng.pick(BAD_LIMITS))}`,
        headers: auth,
      };
    if (kind === 'cursor')
      return {
        category: 'input:cursor',
        method: 'GET',
        path: `/v1/users/${ctx.owner}/notifications?cursor=${enc(badCursor(rng))}`,
        headers: auth,
      };
    if (kind === 'unreadOnly')
      return {
        category: 'input:unreadOnly',
        method: 'GET',
        path: `/v1/users/${ctx.owner}/notifications?unreadOnly=${enc(rng.pick(['maybe', '2', 'yes please', '%00', 'TRUE!']))}`,
        headers: auth,
      };
    if (kind === 'unknown-id')
      return {
        category: 'input:unknown-id',
        method: 'POST',
        path: `/v1/users/${ctx.owner}/notifications/${rng.uuid()}/${rng.pick(['read', 'unread'])}`,
        headers: auth,
      };
    return {
      category: 'input:last-event-id',
      method: 'GET',
      path: `/v1/users/${ctx.owner}/notifications/stream`,
      headers: {
        ...auth,
        'last-event-id': rng.pick([
          ...HEADER_SAFE.filter((s) => !/^\d{1,15}$/.test(s.trim()) && s !== ''),
          '-5',
          'abc',
          '1e5',
          '9'.repeat(16),
        ]),
      },
    };
  }
  // category === 'body'
  const kind = rng.pick(['version', 'preferences', 'content-type', 'malformed', 'empty-json', 'oversized', 'deep']);
  if (kind === 'deep') {
    const nest = (depth: number, leaf: string) => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;
    const depth = rng.int(1_000, 50_000);
    const [op, method, path, body] = rng.pick<[string, string, string, string]>([
      [
        'preferences',
        'PUT',
        `/v1/users/${ctx.owner}/preferences`,
        `{"preferences":{"mention":${nest(depth, '"\\u0000"')}}}`,
      ],
      ['read-all', 'POST', `/v1/users/${ctx.owner}/notifications/read-all`, `{"version":${nest(depth, '1')}}`],
      ['read', 'POST', `/v1/users/${ctx.owner}/notifications/${rng.uuid()}/read`, nest(depth, '{}')],
    ]);
    return {
      category: `body:deep:${op}`,
      method,
      path,
      headers: { ...auth, 'content-type': 'application/json' },
      body,
    };
  }
  if (kind === 'version') {
    const op = rng.pick(['read', 'unread', 'read-all']);
    const path =
      op === 'read-all'
        ? `/v1/users/${ctx.owner}/notifications/read-all`
        : `/v1/users/${ctx.owner}/notifications/${rng.uuid()}/${op}`;
    return {
      category: `body:version:${op}`,
      method: 'POST',
      path,
      headers: { ...auth, 'content-type': 'application/json' },
      body: rng.pick(BAD_VERSION_BODIES),
    };
  }
  const prefs = `/v1/users/${ctx.owner}/preferences`;
  if (kind === 'preferences') {
    const body = rng.chance(0.8)
      ? json(rng.pick(BAD_PREFERENCES))
      : json({ preferences: { [rng.pick(INJECTIONS)]: { email: 'off' } } });
    return {
      category: 'body:preferences',
      method: 'PUT',
      path: prefs,
      headers: { ...auth, 'content-type': 'application/json' },
      body,
    };
  }
  if (kind === 'content-type') {
    return {
      category: 'body:content-type',
      method: 'PUT',
      path: prefs,
      headers: {
        ...auth,
        'content-type': rng.pick([
          'text/plain',
          'application/xml',
          'multipart/form-data; boundary=x',
          'application/x-www-form-urlencoded',
        ]),
      },
      body: json({ preferences: { mention: { email: 'off' } } }),
    };
  }
  if (kind === 'malformed') {
    const text = json({ preferences: { mention: { email: 'off' } } });
    return {
      category: 'body:malformed',
      method: 'PUT',
      path: prefs,
      headers: { ...auth, 'content-type': 'application/json' },
      body: text.slice(0, rng.int(1, text.length - 1)),
    };
  }
  if (kind === 'empty-json')
    return {
      category: 'body:empty-json',
      method: 'PUT',
      path: prefs,
      headers: { ...auth, 'content-type': 'application/json' },
      body: '',
    };
  // Past fastify's default 1 MiB body limit.
  return {
    category: 'body:oversized',
    method: 'PUT',
    path: prefs,
    headers: { ...auth, 'content-type': 'application/json' },
    body: json({ preferences: { mention: { email: 'off' } }, pad: 'x'.repeat(1_100_000) }),
  };
}

// ---- email-service ---------------------------------------------------------------------------------
function unsubscribeRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Omit<BadRequest, 'n' | 'app'> {
  const method = rng.pick(['GET', 'POST']);
  const b64 = (v: unknown) => Buffer.from(json(v)).toString('base64url');
  const [kind, query] = rng.pick<[string, () => string]>([
    ['no-token', () => ''],
    ['empty-token', () => '?token='],
    ['canary-token', () => `?token=${enc(canaries.token())}`],
    ['forged', () => `?token=${b64({ v: 1, u: ctx.owner, s: 'mention' })}.${rng.hex(43)}`],
    ['forged-canary', () => `?token=${b64({ v: 1, u: canaries.email(), s: 'digest' })}.${canaries.token()}`],
    ['api-jwt', () => `?token=${goodToken(ctx.secret, ctx.owner)}`],
    ['injection', () => `?token=${enc(rng.pick(INJECTIONS))}`],
    ['too-long', () => `?token=${'a'.repeat(rng.int(2049, 6000))}`],
    ['two-tokens', () => `?token=${canaries.token()}&token=${canaries.token()}`],
    // Not a credential position: only known credential parameter names are masked in request logs.
    ['wrong-param', () => `?t0ken=${rng.hex(24)}`],
  ]);
  const oversized = method === 'POST' && rng.chance(0.1);
  return {
    category: `unsubscribe:${kind}${oversized ? ':oversized-form' : ''}`,
    method,
    path: `/v1/unsubscribe${query()}`,
    headers: method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {},
    body:
      method === 'POST'
        ? oversized
          ? `List-Unsubscribe=One-Click&pad=${'x'.repeat(10_000)}`
          : 'List-Unsubscribe=One-Click'
        : undefined,
  };
}

/** Methods and paths no app serves, the ops routes included: 404 with fastify's reason. */
function unknownRoute(rng: Rng): Omit<BadRequest, 'n'> {
  const app = rng.pick<AppName>(APP_NAMES);
  const [method, path] = rng.pick<[string, string]>([
    [rng.pick(['POST', 'PUT', 'DELETE', 'PATCH']), rng.pick(['/healthz', '/readyz', '/metrics'])],
    ['GET', rng.pick(['/', '/v1', '/v1/users', '/v2/users/x/notifications', '/admin', '/.env', '/v1/unsubscribe/x'])],
    [rng.pick(['GET', 'POST', 'OPTIONS']), `/v1/${enc(rng.pick(INJECTIONS))}`],
  ]);
  return { app, category: `unknown-route:${app}`, method, path, headers: {} };
}

export function badRequest(rng: Rng, canaries: Canaries, ctx: RequestContext, n: number): BadRequest {
  const roll = rng.next();
  if (roll < 0.02) return { n, ...unknownRoute(rng) };
  if (roll < 0.05) return { n, ...rawRequest(rng, canaries, ctx) };
  if (roll < 0.38) return { n, app: 'notifications', ...inboxRequest(rng, canaries, ctx) };
  if (roll < 0.46) return { n, app: 'email', ...unsubscribeRequest(rng, canaries, ctx) };
  if (roll < 0.56) return { n, app: 'feed', ...feedRequest(rng, canaries, ctx) };
  if (roll < 0.64) return { n, app: 'push', ...pushRequest(rng, canaries, ctx) };
  if (roll < 0.74) return { n, app: 'reconciler', ...reconcilerRequest(rng, canaries, ctx) };
  return { n, app: 'api', ...apiRequest(rng, canaries, ctx) };
}
