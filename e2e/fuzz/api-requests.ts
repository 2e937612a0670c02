import type { Canaries } from './canaries';
import type { Rng } from './random';
import type { BadRequest, RequestContext } from './request-types';
import { BAD_USER_IDS, enc, HEADER_SAFE, INJECTIONS, json } from './strings';
import { badAuth } from './tokens';

/**
 * Bad requests to demo-community-api: unauthenticated writes, schema violations, hostile ids that
 * reach a lookup, unstorable text, over-long correlation ids, bad bodies and unknown routes.
 */
/** Strings ajv cannot coerce into a string (it turns numbers, booleans and one-item arrays into one). */
const NOT_STRINGS: unknown[] = [{}, { a: 1 }, ['a', 'b'], []];

export function apiRequest(rng: Rng, canaries: Canaries, ctx: RequestContext): Omit<BadRequest, 'n' | 'app'> {
  const jsonHeaders = { 'content-type': 'application/json' };
  const actor = { 'x-user-id': ctx.owner };
  const routes: Array<[string, () => Omit<BadRequest, 'n' | 'app'>]> = [
    [
      'auth',
      () => {
        // A valid write with no valid acting user: 401.
        const auth = rng.chance(0.3)
          ? {
              kind: 'unknown-actor',
              header: undefined,
              user: rng.pick([canaries.email(), `ghost-${rng.hex(6)}`, rng.pick(HEADER_SAFE)]),
            }
          : { ...badAuthForApi(rng, canaries, ctx), user: undefined };
        const headers: Record<string, string> = { ...jsonHeaders };
        if (auth.header !== undefined) headers.authorization = auth.header;
        if (auth.user !== undefined) headers['x-user-id'] = auth.user;
        const [method, path, body] = rng.pick<[string, string, unknown]>([
          ['POST', '/v1/posts', { title: 'Hello', body: `mail me at ${canaries.email()}` }],
          ['POST', `/v1/posts/${rng.uuid()}/comments`, { body: 'hi @fuzz-owner' }],
          ['POST', '/v1/reactions', { targetType: 'post', targetId: rng.uuid(), emoji: 'heart' }],
          ['POST', `/v1/users/${ctx.other}/follow`, undefined],
          ['DELETE', `/v1/users/${ctx.other}/follow`, undefined],
        ]);
        if (body === undefined) delete headers['content-type'];
        return {
          category: `api-auth:${auth.kind}`,
          method,
          path,
          headers,
          body: body === undefined ? undefined : json(body),
        };
      },
    ],
    [
      'schema',
      () => {
        const [what, path, body] = rng.pick<[string, string, () => unknown]>([
          [
            'post',
            '/v1/posts',
            () =>
              rng.pick([
                {},
                { title: '', body: 'x' },
                { title: 'x'.repeat(301), body: 'x' },
                { title: rng.pick(NOT_STRINGS), body: 'x' },
                { title: 'x', body: '' },
                { title: 'x', body: 'y'.repeat(20_001) },
              ]),
          ],
          [
            'comment',
            `/v1/posts/${rng.uuid()}/comments`,
            () =>
              rng.pick([
                {},
                { body: '' },
                { body: rng.pick(NOT_STRINGS) },
                { body: 'x', parentCommentId: '' },
                { body: 'x', parentCommentId: 'p'.repeat(65) },
              ]),
          ],
          [
            'reaction',
            '/v1/reactions',
            () =>
              rng.pick([
                {},
                { targetType: 'user', targetId: 'x', emoji: 'a' },
                { targetType: 'post', targetId: '', emoji: 'a' },
                { targetType: 'post', targetId: 'x', emoji: '' },
                { targetType: 'post', targetId: 'x', emoji: 'e'.repeat(65) },
              ]),
          ],
          [
            'user',
            '/v1/users',
            () =>
              rng.pick([
                { id: rng.pick(BAD_USER_IDS), email: canaries.email(), displayName: 'X' },
                { id: 'Upper', email: canaries.email(), displayName: 'X' },
                { id: `ok-${rng.hex(6)}`, email: `${canaries.email()}>`, displayName: 'X' },
                { id: `ok-${rng.hex(6)}`, email: 'not-an-email', displayName: 'X' },
                { id: `ok-${rng.hex(6)}`, email: canaries.email(), displayName: '' },
                {
                  id: `ok-${rng.hex(6)}`,
                  email: canaries.email(),
                  displayName: 'X',
                  locale: rng.pick(['english!', 'e', rng.pick(INJECTIONS)]),
                },
                { id: `ok-${rng.hex(6)}`, email: canaries.email() },
                { id: `ok-${rng.hex(6)}`, email: ctx.ownerEmail, displayName: 'Impostor' },
              ]),
          ],
          [
            'security-alert',
            '/v1/security-alerts',
            () =>
              rng.pick([
                {},
                { userId: '', kind: 'x', detail: 'x' },
                { userId: ctx.owner, kind: '', detail: 'x' },
                { userId: ctx.owner, kind: 'k'.repeat(101), detail: 'x' },
                { userId: ctx.owner, kind: 'x', detail: 'd'.repeat(2001) },
                { userId: ctx.owner, kind: 'x' },
                { userId: rng.pick(NOT_STRINGS), kind: 'x', detail: 'x' },
              ]),
          ],
        ]);
        return {
          category: `api-schema:${what}`,
          method: 'POST',
          path,
          headers: { ...jsonHeaders, ...actor },
          body: json(body()),
        };
      },
    ],
    [
      'text',
      () => {
        // Valid writes but for NUL or an unpaired surrogate in one string: no text the store can keep.
        const bad = rng.pick(['a\u0000b', '\u0000', 'tail\ud800', '\udfffhead', `${canaries.email()}\u0000`]);
        const [what, path, body] = rng.pick<[string, string, unknown]>([
          ['post-title', '/v1/posts', { title: bad, body: 'body' }],
          ['post-body', '/v1/posts', { title: 'title', body: bad }],
          ['comment', `/v1/posts/${rng.uuid()}/comments`, { body: bad }],
          ['reaction-emoji', '/v1/reactions', { targetType: 'post', targetId: rng.uuid(), emoji: bad }],
          [
            'user-name',
            '/v1/users',
            { id: `ok-${rng.hex(6)}`, email: `x${rng.hex(6)}@fuzz.example`, displayName: bad },
          ],
          ['alert-detail', '/v1/security-alerts', { userId: ctx.owner, kind: 'new_login', detail: bad }],
          ['alert-kind', '/v1/security-alerts', { userId: ctx.owner, kind: bad, detail: 'x' }],
        ]);
        // Sometimes the NUL hides deep in a field the schema would drop anyway.
        const depth = rng.int(1_000, 30_000);
        const text = rng.chance(0.2)
          ? json(body).replace(/^\{/, `{"extra":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)},`)
          : json(body);
        return {
          category: `api-text:${what}`,
          method: 'POST',
          path,
          headers: { ...jsonHeaders, ...actor },
          body: text,
        };
      },
    ],
    [
      'correlation',
      () => {
        // A valid write with a correlation id the events cannot carry (the contract allows 1–256 chars).
        const [what, path, body] = rng.pick<[string, string, unknown]>([
          ['post', '/v1/posts', { title: 'title', body: 'body' }],
          ['alert', '/v1/security-alerts', { userId: ctx.owner, kind: 'new_login', detail: 'x' }],
          ['user', '/v1/users', { id: `ok-${rng.hex(8)}`, email: `x${rng.hex(8)}@fuzz.example`, displayName: 'X' }],
        ]);
        // No canary here: a correlation id is meant to be logged.
        const correlationId = rng.chance(0.5)
          ? 'c'.repeat(rng.int(257, 8000))
          : `${rng.uuid()}-${'x'.repeat(rng.int(220, 400))}`;
        return {
          category: `api-correlation:${what}`,
          method: 'POST',
          path,
          headers: { ...jsonHeaders, ...actor, 'x-correlation-id': correlationId },
          body: json(body),
        };
      },
    ],
    [
      'not-found',
      () => {
        // Hostile ids that pass the schema: the lookup must answer 404, whatever the id holds.
        const id = rng.chance(0.2) ? canaries.email() : rng.pick(INJECTIONS);
        const [what, method, path, body] = rng.pick<[string, string, string, unknown]>([
          ['comment-on', 'POST', `/v1/posts/${enc(id)}/comments`, { body: `hello ${canaries.email()}` }],
          ['reply-to', 'POST', `/v1/posts/${enc(id)}/comments`, { body: 'reply', parentCommentId: id }],
          [
            'react-to',
            'POST',
            '/v1/reactions',
            { targetType: rng.pick(['post', 'comment']), targetId: id, emoji: 'heart' },
          ],
          ['follow', 'POST', `/v1/users/${enc(id)}/follow`, undefined],
          ['unfollow', 'DELETE', `/v1/users/${enc(id)}/follow`, undefined],
          [
            'alert-for',
            'POST',
            '/v1/security-alerts',
            { userId: id, kind: 'new_login', detail: `from ${canaries.email()}` },
          ],
          ['self-follow', 'POST', `/v1/users/${ctx.owner}/follow`, undefined],
        ]);
        const headers: Record<string, string> = { ...actor, ...(body === undefined ? {} : jsonHeaders) };
        return {
          category: `api-lookup:${what}`,
          method,
          path,
          headers,
          body: body === undefined ? undefined : json(body),
        };
      },
    ],
    [
      'body',
      () => {
        const kind = rng.pick(['content-type', 'malformed', 'oversized', 'not-object', 'unknown-route']);
        const path = rng.pick(['/v1/posts', '/v1/users', '/v1/reactions', '/v1/security-alerts']);
        if (kind === 'content-type')
          return {
            category: 'api-body:content-type',
            method: 'POST',
            path,
            headers: {
              ...actor,
              'content-type': rng.pick(['text/plain', 'application/xml', 'application/x-www-form-urlencoded']),
            },
            body: json({ title: 'x', body: 'y' }),
          };
        if (kind === 'malformed')
          return {
            category: 'api-body:malformed',
            method: 'POST',
            path,
            headers: { ...actor, ...jsonHeaders },
            body: rng.pick(['{', '{"title":', "{'a':1}", '{"a":1}}', '\u0000', 'nul\u0000l']),
          };
        if (kind === 'oversized')
          return {
            category: 'api-body:oversized',
            method: 'POST',
            path: '/v1/posts',
            headers: { ...actor, ...jsonHeaders },
            body: json({ title: 'x', body: 'y'.repeat(rng.int(70_000, 200_000)) }),
          };
        if (kind === 'not-object')
          return {
            category: 'api-body:not-object',
            method: 'POST',
            path,
            headers: { ...actor, ...jsonHeaders },
            body: rng.pick(['[]', '42', '"x"', 'null', 'true']),
          };
        return {
          category: 'api-body:unknown-route',
          method: rng.pick(['PATCH', 'PUT', 'GET']),
          path: rng.pick(['/v1/posts', `/v1/${enc(rng.pick(INJECTIONS))}`, '/v1/users/../../etc/passwd', '/admin']),
          headers: actor,
        };
      },
    ],
  ];
  return rng.pick(routes)[1]();
}

/** The demo API takes any existing user's token: another user's valid token is not a failure there. */
function badAuthForApi(rng: Rng, canaries: Canaries, ctx: RequestContext) {
  for (;;) {
    // A token that verifies as some user's is a valid actor here (any user may post): not a bad request.
    const auth = badAuth(rng, canaries, ctx.secret, ctx.owner, ctx.other, { service: 'demo-community-api' });
    if (!auth.validUser && auth.header !== undefined && auth.header !== '') return auth;
  }
}
