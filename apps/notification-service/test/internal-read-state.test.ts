import { randomUUID, generateKeyPairSync } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { mentionKey, reactionKey, type AnyEvent } from '@community/contracts';
import { DEV_EMAIL_SERVICE_SIGNING_KEY, DEV_PUSH_SERVICE_SIGNING_KEY } from '@community/config';
import { ReadStateClient, serviceTokenSigner } from '@community/service';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { batchItems, bearer, event, mention, startHarness, type Harness } from './harness';

/**
 * POST /v1/internal/read-state (docs/NOTIFICATIONS.md "Delivery timing"): the senders ask, after a
 * hold, which of a user's notifications were read in the app. Only email-service's and
 * push-service's service tokens with the scope notifications:read-state, each signed with that
 * service's own key; a grouped notification counts as read when its item was read after it joined.
 */
let h: Harness;
let baseUrl: string;
beforeAll(async () => {
  h = await startHarness('readstate', { amqp: false });
  baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => h.close());

const SCOPE = 'notifications:read-state';
const serviceToken = (
  issuer: string,
  key: string | ReturnType<typeof generateKeyPairSync>['privateKey'],
  scope = SCOPE,
) => serviceTokenSigner({ signingKey: key, issuer, audience: 'notification-service', scope })();
const emailToken = () => serviceToken('email-service', DEV_EMAIL_SERVICE_SIGNING_KEY);
const pushToken = () => serviceToken('push-service', DEV_PUSH_SERVICE_SIGNING_KEY);

const ask = (token: string | undefined, body: unknown) =>
  h.app.inject({
    method: 'POST',
    url: '/v1/internal/read-state',
    headers: { ...(token ? bearer(token) : {}), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

/** Runs events through the consumers' batch handler, one batch each. */
async function ingest(batches: AnyEvent[][]): Promise<void> {
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: 'read-state-test',
    metrics: h.metrics,
    batchTimeoutMs: 10_000,
  });
  for (const batch of batches) {
    const results = await handle(batchItems(batch), { signal: new AbortController().signal } as never);
    for (const r of results ?? []) if (r instanceof Error) throw r;
  }
}

const uid = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

async function inbox(userId: string): Promise<Array<{ id: string; type: string; group: { count: number } | null }>> {
  const res = await h.app.inject({ url: `/v1/users/${userId}/notifications`, headers: bearer(h.token(userId)) });
  expect(res.statusCode).toBe(200);
  return res.json().items;
}
async function mark(userId: string, id: string, state: 'read' | 'unread'): Promise<void> {
  const res = await h.app.inject({
    method: 'POST',
    url: `/v1/users/${userId}/notifications/${id}/${state}`,
    headers: bearer(h.token(userId)),
  });
  expect(res.statusCode).toBe(200);
}

function reaction(owner: string, postId: string, actor: string, minute: number) {
  const e = event('reaction.added', {
    reactionId: uid('r'),
    actorId: actor,
    targetType: 'post',
    targetId: postId,
    targetAuthorId: owner,
    emoji: '👍',
  });
  return {
    event: { ...e, occurredAt: new Date(Date.UTC(2026, 11, 4, 9, minute)).toISOString() },
    reactionId: e.data.reactionId,
  };
}

it("answers the keys of this user that are read: read, unread again, unknown, another user's", async () => {
  const ana = uid('ana');
  const budi = uid('budi');
  const [c1, c2, c3, cb] = ['c1', 'c2', 'c3', 'cb'].map(uid);
  await ingest([[mention(c1, 'x', ana), mention(c2, 'x', ana), mention(c3, 'x', ana), mention(cb, 'x', budi)]]);
  const items = await inbox(ana);
  expect(items).toHaveLength(3);
  const idOf = async (commentId: string) => {
    const { rows } = await h.pool.query<{ id: string }>(
      'SELECT id FROM notification_items WHERE idempotency_key = $1',
      [mentionKey(commentId, ana)],
    );
    return rows[0].id;
  };
  await mark(ana, await idOf(c1), 'read');
  await mark(ana, await idOf(c2), 'read');
  await mark(ana, await idOf(c2), 'unread'); // marked unread again: the user wants it back, not read
  await mark(budi, (await inbox(budi))[0].id, 'read');

  const keys = [
    mentionKey(c1, ana),
    mentionKey(c2, ana),
    mentionKey(c3, ana),
    mentionKey(cb, budi),
    'mention:nope:nope',
  ];
  for (const token of [emailToken(), pushToken()]) {
    const res = await ask(token, { userId: ana, idempotencyKeys: keys });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ read: [mentionKey(c1, ana)] });
  }
  // Budi's key is read for Budi, not for Ana.
  expect((await ask(emailToken(), { userId: budi, idempotencyKeys: keys })).json()).toEqual({
    read: [mentionKey(cb, budi)],
  });
});

it('grouped: a member is read when its item was read after it joined; a later member is not, until read again', async () => {
  const owner = uid('owner');
  const post = uid('post');
  const a = reaction(owner, post, uid('a'), 1);
  const b = reaction(owner, post, uid('b'), 2);
  const c = reaction(owner, post, uid('c'), 3);
  await ingest([[a.event, b.event]]);
  const [item] = await inbox(owner);
  expect(item.group?.count).toBe(2);
  await mark(owner, item.id, 'read');
  await ingest([[c.event]]); // joins after the read: the item is unread again
  const [after] = await inbox(owner);
  expect(after.group?.count).toBe(3);

  const keys = [a, b, c].map((r) => reactionKey(r.reactionId));
  const first = await ask(pushToken(), { userId: owner, idempotencyKeys: keys });
  expect(first.statusCode).toBe(200);
  expect(new Set(first.json().read)).toEqual(new Set(keys.slice(0, 2)));

  await mark(owner, after.id, 'read');
  const second = await ask(pushToken(), { userId: owner, idempotencyKeys: keys });
  expect(new Set(second.json().read)).toEqual(new Set(keys));
});

it('ReadStateClient against the running route: the read subset, and a rejection naming the status', async () => {
  const user = uid('carol');
  const [c1, c2] = ['c1', 'c2'].map(uid);
  await ingest([[mention(c1, 'x', user), mention(c2, 'x', user)]]);
  const { rows } = await h.pool.query<{ id: string }>('SELECT id FROM notification_items WHERE idempotency_key = $1', [
    mentionKey(c1, user),
  ]);
  await mark(user, rows[0].id, 'read');

  for (const issuer of ['email-service', 'push-service'] as const) {
    const client = new ReadStateClient({
      baseUrl,
      issuer,
      signingKey: issuer === 'email-service' ? DEV_EMAIL_SERVICE_SIGNING_KEY : DEV_PUSH_SERVICE_SIGNING_KEY,
      timeoutMs: 5_000,
    });
    await expect(client.readKeys(user, [mentionKey(c1, user), mentionKey(c2, user), 'unknown'])).resolves.toEqual(
      new Set([mentionKey(c1, user)]),
    );
  }
  // push-service's name with email-service's key: the route refuses it, the client rejects.
  const impostor = new ReadStateClient({
    baseUrl,
    issuer: 'push-service',
    signingKey: DEV_EMAIL_SERVICE_SIGNING_KEY,
    timeoutMs: 5_000,
  });
  await expect(impostor.readKeys(user, [mentionKey(c1, user)])).rejects.toThrow(/HTTP 401/);
  await expect(impostor.readKeys(user, [])).rejects.toThrow(/1\.\.100 idempotency keys/);
});

describe('who may call it', () => {
  const body = { userId: 'ana', idempotencyKeys: ['mention:c:ana'] };

  it("a user token or an operator's admin token: 403 NS_SERVICE_TOKEN_REQUIRED", async () => {
    const asUser = await ask(h.token('ana'), body);
    expect(asUser.statusCode).toBe(403);
    expect(asUser.json()).toEqual({
      statusCode: 403,
      code: 'NS_SERVICE_TOKEN_REQUIRED',
      error: 'Forbidden',
      message:
        "user 'ana' may not use this route: it takes a service token of email-service or push-service with the scope 'notifications:read-state'",
    });
    const asAdmin = await ask(h.token('operator', 'admin'), body);
    expect(asAdmin.statusCode).toBe(403);
    expect(asAdmin.json().code).toBe('NS_SERVICE_TOKEN_REQUIRED');
    expect(asAdmin.json().message).toMatch(/^operator '.+' may not use this route/);
  });

  it('a service token without the scope: 403 NS_SERVICE_FORBIDDEN', async () => {
    for (const token of [
      serviceToken('email-service', DEV_EMAIL_SERVICE_SIGNING_KEY, 'preferences:opt-out'),
      serviceToken('push-service', DEV_PUSH_SERVICE_SIGNING_KEY, 'something:else'),
    ]) {
      const res = await ask(token, body);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({
        code: 'NS_SERVICE_FORBIDDEN',
        message: expect.stringMatching(/'notifications:read-state' scope/),
      });
    }
  });

  it("another service's key, another issuer, another audience, expired, or none: 401", async () => {
    const expired = createSigner({
      key: DEV_PUSH_SERVICE_SIGNING_KEY,
      algorithm: 'EdDSA',
      iss: 'push-service',
      sub: 'push-service',
      aud: 'notification-service',
      expiresIn: 5 * 60_000,
      clockTimestamp: Date.now() - 10 * 60_000,
    })({ scope: SCOPE });
    const cases: Array<[string, string | undefined]> = [
      ['push-service signed with email-service key', serviceToken('push-service', DEV_EMAIL_SERVICE_SIGNING_KEY)],
      ['email-service signed with push-service key', serviceToken('email-service', DEV_PUSH_SERVICE_SIGNING_KEY)],
      ['another key', serviceToken('push-service', generateKeyPairSync('ed25519').privateKey)],
      ['another issuer', serviceToken('demo-community-api', DEV_EMAIL_SERVICE_SIGNING_KEY)],
      [
        'another audience',
        serviceTokenSigner({
          signingKey: DEV_PUSH_SERVICE_SIGNING_KEY,
          issuer: 'push-service',
          audience: 'email-service',
          scope: SCOPE,
        })(),
      ],
      ['expired', expired],
      ['no token', undefined],
    ];
    for (const [what, token] of cases) {
      const res = await ask(token, body);
      expect({ what, status: res.statusCode }).toEqual({ what, status: 401 });
      expect(res.json().code).toMatch(/^(NS_INVALID_TOKEN|FAST_JWT_[A-Z_]+)$/);
    }
  });

  it("the read-state tokens open no other route: email-service's is 403 there, push-service's 401", async () => {
    for (const url of ['/v1/users/ana/preferences', '/v1/users/ana/notifications']) {
      const viaEmail = await h.app.inject({ url, headers: bearer(emailToken()) });
      expect(viaEmail.statusCode).toBe(403);
      expect(viaEmail.json().code).toBe('NS_SERVICE_FORBIDDEN');
      // notification-service trusts push-service's key for read state only: elsewhere it is unknown.
      expect((await h.app.inject({ url, headers: bearer(pushToken()) })).statusCode).toBe(401);
    }
  });
});

it.each([
  ['no keys', { userId: 'ana', idempotencyKeys: [] }, /idempotencyKeys must be an array of 1 to 100/],
  [
    '101 keys',
    { userId: 'ana', idempotencyKeys: Array.from({ length: 101 }, (_, i) => `k${i}`) },
    /idempotencyKeys must be an array of 1 to 100 .*got 101/,
  ],
  ['no user', { idempotencyKeys: ['k'] }, /userId must be/],
  ['a stray field', { userId: 'ana', idempotencyKeys: ['k'], since: 1 }, /unknown field 'since'/],
  ['a key that is not a string', { userId: 'ana', idempotencyKeys: ['k', 7] }, /idempotencyKeys\/1 must be/],
  ['an empty user id', { userId: '', idempotencyKeys: ['k'] }, /userId must be/],
  ['not an object', ['ana'], /body must be a JSON object/],
])('400 for %s, with the reason', async (_what, payload, reason) => {
  const res = await ask(emailToken(), payload);
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ code: 'NS_INVALID_BODY', message: expect.stringMatching(reason) });
  expect((await ask(undefined, payload)).statusCode).toBe(401); // authentication comes first
});

it('is in /openapi.json with its body, answer and the service token it takes', async () => {
  const doc = (await h.app.inject({ url: '/openapi.json' })).json();
  const op = doc.paths['/v1/internal/read-state'].post;
  expect(op.security).toEqual([{ serviceToken: [SCOPE] }]);
  expect(op.requestBody.content['application/json'].schema.properties.idempotencyKeys).toMatchObject({
    minItems: 1,
    maxItems: 100,
  });
  expect(op.responses['200'].content['application/json'].schema.properties.read.type).toBe('array');
  expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403']));
});
