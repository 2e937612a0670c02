import type { Canaries } from './canaries';
import type { Rng } from './random';
import type { BadRequest, RequestContext } from './request-types';
import { enc, INJECTIONS, json } from './strings';
import { adminToken, badAuth } from './tokens';

/**
 * Bad requests to the reconciler's admin API and DLQ console (docs/RECONCILER.md "HTTP API",
 * docs/DLQ-CONSOLE.md "API"): every route without a valid admin token, and with one, bodies,
 * filters, ids and targets the routes refuse. None is a valid request: a dry run that would
 * succeed, or a selection that matches nothing, is not sent; nor is a field the schema would
 * coerce (a number or a one-item array for a string) or drop (an unknown property: fastify's ajv
 * removes additional properties), which makes a valid request of it.
 */
const NUL = ['a\u0000b', '\u0000', `x${'\u0000'.repeat(3)}`];
const HOSTILE = INJECTIONS.filter((s) => s.length > 0);

/** Every admin route, for the requests that carry no valid admin proof. */
const ROUTES: Array<[string, string, unknown]> = [
  ['GET', '/v1/admin/status', undefined],
  ['GET', '/v1/admin/jobs', undefined],
  ['POST', '/v1/admin/jobs/counters.sweep/run?dryRun=true', undefined],
  ['POST', '/v1/admin/recount', { dryRun: true }],
  ['POST', '/v1/admin/feeds/rebuild', { all: true, dryRun: true }],
  ['GET', '/v1/admin/why?userId=u&eventId=e', undefined],
  ['GET', '/v1/admin/dlq', undefined],
  ['GET', '/v1/admin/dlq/groups', undefined],
  ['GET', '/v1/admin/dlq/messages', undefined],
  ['GET', '/v1/admin/dlq/messages/1', undefined],
  ['GET', '/v1/admin/dlq/operations', undefined],
  ['GET', '/v1/admin/dlq/operations/1', undefined],
  ['POST', '/v1/admin/dlq/replay', { filter: {} }],
  ['POST', '/v1/admin/dlq/discard', { filter: {} }],
  ['POST', '/v1/admin/dlq/restore', { filter: {} }],
  ['POST', '/v1/admin/users/u/erasure', {}],
  ['GET', '/v1/admin/erasures/1', undefined],
];

/** Filters the console refuses (400 RC_DLQ_INVALID_FILTER), as query string values. */
function badFilter(rng: Rng, canaries: Canaries): Record<string, string> {
  const key = rng.pick(['queue', 'originalQueue', 'group', 'q', 'errorClass', 'messageType']);
  return rng.pick<() => Record<string, string>>([
    () => ({ state: rng.pick(['lost', 'PENDING', 'pending ', canaries.email(), rng.pick(HOSTILE)]) }),
    () => ({
      [rng.pick(['since', 'until'])]: rng.pick([
        'yesterday',
        '2026-13-01T10:00:00Z',
        'x',
        canaries.email(),
        '-100000-01-01T00:00:00Z',
        '+275760-09-13T00:00:00Z',
        '99999',
      ]),
    }),
    () => ({ asOf: rng.pick(['abc', '-1', '1.5', '9'.repeat(19), rng.pick(HOSTILE)]) }),
    () => ({ [key]: 'q'.repeat(rng.int(501, 3000)) }),
    () => ({ [key]: rng.pick(NUL) }),
  ])();
}

const qs = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => `${k}=${enc(v)}`)
    .join('&');

/** Action bodies the console refuses (400 RC_DLQ_INVALID_SELECTION / RC_DLQ_INVALID_FILTER). */
function badSelection(rng: Rng, canaries: Canaries, action: 'replay' | 'discard'): unknown {
  return rng.pick<() => unknown>([
    () => ({}),
    () => ({ ids: ['1'], filter: {} }),
    () => ({ ids: [] }),
    () => ({ ids: 'all' }),
    () => ({ ids: [rng.pick(HOSTILE)] }),
    () => ({ ids: [canaries.email()] }),
    () => ({ ids: Array.from({ length: 10_001 }, (_, i) => String(i + 1)) }),
    () => ({ filter: [] }),
    () => ({ filter: 'all' }),
    () => ({ filter: null }),
    () => ({ filter: { state: 'lost' } }),
    () => ({ filter: { q: rng.pick(NUL) } }),
    () => ({ filter: { since: rng.pick(['yesterday', '-100000-01-01T00:00:00Z', '+012345-01-01T00:00:00Z']) } }),
    () => ({ filter: { queue: { $ne: null } } }),
    () => ({ filter: {}, dryRun: rng.pick(['no', 0, 'false', null]) }),
    // A rate only a replay reads (a discard ignores it: its dry run would be a valid request).
    () =>
      action === 'replay'
        ? { filter: {}, ratePerSecond: rng.pick([0, -1, 1.5, 1001, '50', 1e308, null]) }
        : { filter: {}, dryRun: 'yes' },
    () => [],
    () => 'filter',
    () => 42,
  ])();
}

export function reconcilerRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Omit<BadRequest, 'n' | 'app'> {
  const admin = { authorization: `Bearer ${adminToken('reconciler')}` };
  const jsonHeaders = { ...admin, 'content-type': 'application/json' };
  const kind = rng.pick([
    'auth',
    'auth',
    'jobs',
    'recount',
    'feeds',
    'why',
    'dlq-list',
    'dlq-ids',
    'dlq-action',
    'body',
  ]);
  if (kind === 'auth') {
    // Without a valid admin proof (another user's valid token has no admin scope): 401 or 403.
    const auth = badAuth(rng, canaries, ctx.secret, ctx.owner, ctx.other, { service: 'reconciler' });
    const [method, path, body] = rng.pick(ROUTES);
    const headers: Record<string, string> = auth.header === undefined ? {} : { authorization: auth.header };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return {
      category: `rc-auth:${auth.kind}`,
      method,
      path,
      headers,
      body: body === undefined ? undefined : json(body),
    };
  }
  if (kind === 'jobs') {
    if (rng.chance(0.7)) {
      const job = rng.pick([
        rng.pick(HOSTILE),
        canaries.email(),
        'counters',
        'COUNTERS.SWEEP',
        'counters.sweep ',
        ...NUL,
      ]);
      return {
        category: 'rc-jobs:unknown-job',
        method: 'POST',
        path: `/v1/admin/jobs/${enc(job)}/run?dryRun=true`,
        headers: admin,
      };
    }
    return {
      category: 'rc-jobs:bad-query',
      method: 'POST',
      path: `/v1/admin/jobs/counters.sweep/run?${rng.pick(['dryRun=maybe', 'dryRun=2', 'dryRun=%00', 'dryRun=', 'dryRun=yes%20please'])}`,
      headers: admin,
    };
  }
  if (kind === 'recount') {
    const body = rng.pick<unknown>([
      { userId: '' },
      { userId: 'u'.repeat(rng.int(201, 2000)) },
      { userId: rng.pick(NUL) },
      { userId: { id: 'x' } },
      { userId: ['a', 'b'] },
      { dryRun: 'yes' },
      [],
      'everyone',
    ]);
    return {
      category: 'rc-recount:bad-body',
      method: 'POST',
      path: '/v1/admin/recount',
      headers: jsonHeaders,
      body: json(body),
    };
  }
  if (kind === 'feeds') {
    const body = rng.pick<unknown>([
      {},
      { dryRun: true },
      { userId: 'x', all: true },
      { all: false },
      { all: 'yes' },
      { userId: '' },
      { userId: 'u'.repeat(rng.int(257, 2000)) },
      { userId: rng.pick(NUL), dryRun: true },
      { userId: { id: 'x' } },
      { userId: ['a', 'b'] },
    ]);
    return {
      category: 'rc-feeds:bad-body',
      method: 'POST',
      path: '/v1/admin/feeds/rebuild',
      headers: jsonHeaders,
      body: json(body),
    };
  }
  if (kind === 'why') {
    const user = rng.pick([ctx.owner, canaries.email(), rng.pick(HOSTILE)]);
    const query = rng.pick<() => Record<string, string>>([
      () => ({ userId: user }),
      () => ({ eventId: rng.uuid() }),
      () => ({ userId: user, eventId: rng.uuid(), commentId: rng.uuid() }),
      () => ({ userId: user, eventId: rng.uuid(), idempotencyKey: `mention:${rng.uuid()}:${user}` }),
      () => ({ userId: rng.pick(NUL), eventId: rng.uuid() }),
      () => ({ userId: user, eventId: rng.pick(NUL) }),
      () => ({ userId: user, commentId: rng.pick(NUL) }),
      () => ({ userId: user, idempotencyKey: rng.pick(NUL) }),
      () => ({ userId: 'u'.repeat(rng.int(1025, 3000)), eventId: rng.uuid() }),
      () => ({ userId: user, eventId: 'e'.repeat(rng.int(1025, 3000)) }),
    ])();
    return { category: 'rc-why:bad-target', method: 'GET', path: `/v1/admin/why?${qs(query)}`, headers: admin };
  }
  if (kind === 'dlq-list') {
    const route = rng.pick(['/v1/admin/dlq/groups', '/v1/admin/dlq/messages']);
    if (route === '/v1/admin/dlq/messages' && rng.chance(0.3)) {
      const page: Record<string, string> = rng.chance(0.5)
        ? { limit: rng.pick(['0', '501', '-1', 'abc', '1.5', '1e3', 'NaN']) }
        : { cursor: rng.pick(['abc', '-1', '1.5', '9'.repeat(19), rng.pick(HOSTILE)]) };
      return { category: 'rc-dlq-list:page', method: 'GET', path: `${route}?${qs(page)}`, headers: admin };
    }
    return {
      category: 'rc-dlq-list:filter',
      method: 'GET',
      path: `${route}?${qs(badFilter(rng, canaries))}`,
      headers: admin,
    };
  }
  if (kind === 'dlq-ids') {
    // Ids that name no dead letter or operation: 404 with the console's code.
    const id = rng.pick([
      '0',
      '999999999999999999',
      '9'.repeat(19),
      'abc',
      '-1',
      '1.5',
      canaries.email(),
      rng.pick(HOSTILE),
      ...NUL,
    ]);
    const what = rng.pick(['messages', 'operations']);
    return { category: `rc-dlq-ids:${what}`, method: 'GET', path: `/v1/admin/dlq/${what}/${enc(id)}`, headers: admin };
  }
  if (kind === 'dlq-action') {
    const action = rng.pick(['replay', 'discard'] as const);
    return {
      category: `rc-dlq-action:${action}`,
      method: 'POST',
      path: `/v1/admin/dlq/${action}`,
      headers: jsonHeaders,
      body: json(badSelection(rng, canaries, action)),
    };
  }
  // Bodies no route can parse.
  const path = rng.pick([
    '/v1/admin/recount',
    '/v1/admin/feeds/rebuild',
    '/v1/admin/dlq/replay',
    '/v1/admin/dlq/discard',
  ]);
  const b = rng.pick(['content-type', 'malformed', 'oversized']);
  if (b === 'content-type')
    return {
      category: 'rc-body:content-type',
      method: 'POST',
      path,
      headers: {
        ...admin,
        'content-type': rng.pick(['text/plain', 'application/xml', 'application/x-www-form-urlencoded']),
      },
      body: json({ filter: {} }),
    };
  if (b === 'malformed')
    return {
      category: 'rc-body:malformed',
      method: 'POST',
      path,
      headers: jsonHeaders,
      body: rng.pick(['{', '{"filter":', "{'a':1}", '{"a":1}}', 'nul\u0000l']),
    };
  return {
    category: 'rc-body:oversized',
    method: 'POST',
    path,
    headers: jsonHeaders,
    body: json({ filter: {}, pad: 'x'.repeat(1_100_000) }),
  };
}
