import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg, { type Pool } from 'pg';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  type PeekedMessage,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { REQUEST_KEYS_PURGE_JOB } from '../src/jobs/purge-request-keys';
import type { DemoService } from '../src/service';
import { count, createUsers, testService } from './helpers';

/**
 * Producer-side dedup (docs/CONTRACT.md "Producer-side dedup (Idempotency-Key)"): a retry with the
 * same Idempotency-Key, or an identical keyless request within the fingerprint window, is answered
 * with the first answer and writes nothing more, on the real database and broker. The TTLs are read
 * against the service's clock, which the tests step forward instead of waiting.
 */
const TAP = 'test.idempotency.tap';
const topology: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: [
    ...COMMUNITY_TOPOLOGY.queues,
    { name: TAP, bindings: [{ exchange: 'community.events', routingKeys: ['#'] }], retryDelaysMs: [] },
  ],
};
const KEY_TTL_MS = 86_400_000; // the defaults
const FINGERPRINT_TTL_MS = 10_000;

let vhost: TestVhost;
let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;
let now = new Date('2026-12-03T10:00:00.000Z');
const advance = (ms: number) => {
  now = new Date(now.getTime() + ms);
};

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('demo-idem'), createTestDatabase('demo_idempotency')]);
  // A purge batch of 2, so a purge of a handful of rows takes several batches.
  service = testService(db, { vhost, topology, clock: () => now, env: { REQUEST_KEYS_PURGE_BATCH_SIZE: '2' } });
  ({ pool, app } = service);
  await app.listen({ port: 0, host: '127.0.0.1' });
  await service.start();
  await createUsers(app, ['ada', 'bob', 'grace']);
});

afterAll(async () => {
  await service.stop();
  await app.close();
  await Promise.all([vhost.delete(), db.drop()]);
});

type Headers = Record<string, string>;
const as = (user: string, key?: string): Headers => ({
  'x-user-id': user,
  ...(key === undefined ? {} : { 'idempotency-key': key }),
});
const newPost = (headers: Headers, payload: Record<string, string>) =>
  app.inject({ method: 'POST', url: '/v1/posts', headers, payload });

const rowsOf = async (sql: string, values: unknown[] = []): Promise<number> =>
  (await pool.query(sql, values)).rowCount ?? 0;

/** Posts with this title, and the post.published events written for them. */
async function postsTitled(title: string): Promise<{ posts: number; events: number }> {
  const posts = await pool.query('SELECT 1 FROM community_posts WHERE title = $1', [title]);
  const events = await pool.query(
    `SELECT 1 FROM outbox_messages WHERE event_type = 'post.published' AND payload->'data'->>'title' = $1`,
    [title],
  );
  return { posts: posts.rowCount ?? 0, events: events.rowCount ?? 0 };
}

/** The same answer, byte for byte, replayed: same status, same body, the replay header. */
function expectReplayOf(replay: LightMyRequestResponse, first: LightMyRequestResponse): void {
  expect(first.headers['idempotent-replayed']).toBeUndefined();
  expect({ status: replay.statusCode, body: replay.body, replayed: replay.headers['idempotent-replayed'] }).toEqual({
    status: first.statusCode,
    body: first.body,
    replayed: 'true',
  });
}

/** Every event published so far on the tap queue (the outbox drained first: confirmed means queued). */
async function publishedSoFar(): Promise<PeekedMessage[]> {
  await eventually(
    'outbox drained',
    async () => (await pool.query('SELECT 1 FROM outbox_messages WHERE sent_at IS NULL LIMIT 1')).rowCount === 0,
    60_000,
  );
  const messages: PeekedMessage[] = [];
  for (;;) {
    const batch = await vhost.take(TAP, 500);
    messages.push(...batch);
    if (batch.length < 500) return messages;
  }
}

describe('Idempotency-Key', () => {
  it('answers a retry with the first answer and Idempotent-Replayed: true: one post, one outbox event, one message on the broker', async () => {
    await publishedSoFar(); // empties the tap of the set-up's events
    const key = randomUUID();
    const payload = { title: 'Retried once', body: 'The response was lost on the way back.' };
    const first = await newPost(as('ada', key), payload);
    expect(first.statusCode).toBe(201);
    const retry = await newPost(as('ada', key), payload);
    expectReplayOf(retry, first);
    expect(retry.json().id).toBe(first.json().id);
    expect(await postsTitled(payload.title)).toEqual({ posts: 1, events: 1 });

    const published = (await publishedSoFar()).filter((m) => JSON.parse(m.body).data.postId === first.json().id);
    expect(published.map((m) => m.routingKey)).toEqual(['post.published']);
    // The retry made nothing: its correlation id is on no event.
    const { rows } = await pool.query(`SELECT 1 FROM outbox_messages WHERE payload->>'correlationId' = $1`, [
      retry.headers['x-correlation-id'],
    ]);
    expect(rows).toEqual([]);
  });

  it('replays every write route, status and body as first answered, with every field the route sends', async () => {
    const post = (await newPost(as('grace'), { title: 'Replays', body: 'Every route.' })).json();
    // What the deletions delete: a second DELETE without the key would be a 404, the retry replays the 200.
    const doomed = (await newPost(as('grace'), { title: 'Doomed', body: 'Deleted below.' })).json();
    const comment = (
      await app.inject({
        method: 'POST',
        url: `/v1/posts/${post.id}/comments`,
        headers: as('bob'),
        payload: { body: 'to delete' },
      })
    ).json();
    const reaction = (
      await app.inject({
        method: 'POST',
        url: '/v1/reactions',
        headers: as('ada'),
        payload: { targetType: 'post', targetId: post.id, emoji: '🗑️' },
      })
    ).json();
    const writes: Array<{ name: string; run: (key: string) => Promise<LightMyRequestResponse>; fields: string[] }> = [
      {
        name: 'POST /v1/users',
        run: (key) =>
          app.inject({
            method: 'POST',
            url: '/v1/users',
            headers: { 'idempotency-key': key },
            payload: { id: 'dora', email: 'dora@example.test', displayName: 'Dora', locale: 'fr' },
          }),
        fields: ['createdAt', 'displayName', 'email', 'id', 'locale', 'timezone', 'updatedAt'],
      },
      {
        name: 'POST /v1/posts/:postId/comments',
        run: (key) =>
          app.inject({
            method: 'POST',
            url: `/v1/posts/${post.id}/comments`,
            headers: as('bob', key),
            payload: { body: 'Agreed, @ada' },
          }),
        fields: ['authorId', 'body', 'createdAt', 'id', 'mentionedUserIds', 'parentCommentId', 'postId'],
      },
      {
        name: 'POST /v1/reactions',
        run: (key) =>
          app.inject({
            method: 'POST',
            url: '/v1/reactions',
            headers: as('bob', key),
            payload: { targetType: 'post', targetId: post.id, emoji: '🎉' },
          }),
        fields: ['actorId', 'createdAt', 'emoji', 'id', 'targetId', 'targetType'],
      },
      {
        name: 'POST /v1/users/:userId/follow',
        run: (key) => app.inject({ method: 'POST', url: '/v1/users/grace/follow', headers: as('bob', key) }),
        fields: ['followeeId', 'followerId', 'following'],
      },
      {
        name: 'DELETE /v1/users/:userId/follow',
        run: (key) => app.inject({ method: 'DELETE', url: '/v1/users/grace/follow', headers: as('bob', key) }),
        fields: ['followeeId', 'followerId', 'following'],
      },
      {
        name: 'DELETE /v1/posts/:postId',
        run: (key) => app.inject({ method: 'DELETE', url: `/v1/posts/${doomed.id}`, headers: as('grace', key) }),
        fields: ['comments', 'deleted', 'id', 'reactions'],
      },
      {
        name: 'DELETE /v1/comments/:commentId',
        run: (key) => app.inject({ method: 'DELETE', url: `/v1/comments/${comment.id}`, headers: as('bob', key) }),
        fields: ['commentIds', 'deleted', 'id', 'postId'],
      },
      {
        name: 'DELETE /v1/reactions/:reactionId',
        run: (key) => app.inject({ method: 'DELETE', url: `/v1/reactions/${reaction.id}`, headers: as('ada', key) }),
        fields: ['actorId', 'deleted', 'emoji', 'id', 'targetId', 'targetType'],
      },
      {
        name: 'POST /v1/security-alerts',
        run: (key) =>
          app.inject({
            method: 'POST',
            url: '/v1/security-alerts',
            headers: { 'idempotency-key': key },
            payload: { userId: 'ada', kind: 'new-login', detail: 'Firefox on Linux' },
          }),
        fields: ['createdAt', 'detail', 'id', 'kind', 'userId'],
      },
    ];
    for (const write of writes) {
      const key = randomUUID();
      const first = await write.run(key);
      const outbox = await count(pool, 'outbox_messages');
      const retry = await write.run(key);
      expect({ route: write.name, status: first.statusCode < 300, fields: Object.keys(first.json()).sort() }).toEqual({
        route: write.name,
        status: true,
        fields: write.fields,
      });
      expectReplayOf(retry, first);
      expect({ route: write.name, outbox: await count(pool, 'outbox_messages') }).toEqual({
        route: write.name,
        outbox,
      });
    }
  });

  it('refuses the same key for another request with 422 IDEMPOTENCY_KEY_REUSED and writes nothing; the first request still replays', async () => {
    const key = randomUUID();
    const payload = { title: 'Key reuse', body: 'First.' };
    const first = await newPost(as('ada', key), payload);
    const before = await count(pool, 'outbox_messages');
    const otherBody = await newPost(as('ada', key), { ...payload, body: 'Second.' });
    const otherRoute = await app.inject({ method: 'POST', url: '/v1/users/bob/follow', headers: as('ada', key) });
    for (const refused of [otherBody, otherRoute]) {
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toEqual({
        statusCode: 422,
        code: 'IDEMPOTENCY_KEY_REUSED',
        error: 'Unprocessable Entity',
        message: expect.stringContaining('already used for a different request'),
      });
    }
    expect(await count(pool, 'outbox_messages')).toBe(before);
    expect(await rowsOf(`SELECT 1 FROM community_follows WHERE follower_id = 'ada' AND followee_id = 'bob'`)).toBe(0);
    expectReplayOf(await newPost(as('ada', key), payload), first);
  });

  it('answers 400 IDEMPOTENCY_KEY_INVALID for an empty, too long or non-visible-ASCII key, and writes nothing', async () => {
    const before = await count(pool, 'community_posts');
    for (const [key, reason] of [
      ['', 'it is empty'],
      ['k'.repeat(256), 'it has 256 characters, more than 255'],
      ['two words', 'not visible ASCII'],
      ['tab\there', 'not visible ASCII'],
      ['caf\u00e9', 'not visible ASCII'],
    ]) {
      const res = await newPost(as('ada', key), { title: 'Bad key', body: 'x' });
      expect({ key, status: res.statusCode, body: res.json() }).toEqual({
        key,
        status: 400,
        body: {
          statusCode: 400,
          code: 'IDEMPOTENCY_KEY_INVALID',
          error: 'Bad Request',
          message: expect.stringContaining(reason),
        },
      });
    }
    expect(await count(pool, 'community_posts')).toBe(before);
    // 255 visible ASCII characters are a key.
    expect((await newPost(as('ada', `~${'k'.repeat(254)}`), { title: 'Long key', body: 'x' })).statusCode).toBe(201);
  });

  it('does not keep the key of a failed write: the retry after the cause is fixed writes, and is then replayed', async () => {
    const key = randomUUID();
    const follow = () => app.inject({ method: 'POST', url: '/v1/users/zoe/follow', headers: as('ada', key) });
    const missing = await follow();
    expect([missing.statusCode, missing.json().code]).toEqual([404, 'USER_NOT_FOUND']);
    expect(await rowsOf('SELECT 1 FROM community_request_keys WHERE key = $1', [`key:${key}`])).toBe(0);

    await createUsers(app, ['zoe']);
    const written = await follow();
    expect([written.statusCode, written.headers['idempotent-replayed']]).toEqual([201, undefined]);
    expectReplayOf(await follow(), written);
    expect(
      await rowsOf(`SELECT 1 FROM outbox_messages WHERE event_type = 'user.followed' AND aggregate_id = 'zoe'`),
    ).toBe(1);
  });

  it('makes a concurrent retry wait for the first request’s commit and replay it: one write', async () => {
    const key = randomUUID();
    const payload = { title: 'Concurrent retry', body: 'Two at once.' };
    // Hold the first request inside its transaction (after its claim, before its post is written)
    // by locking community_posts against inserts; the second then queues on the first's claim.
    const locker = new pg.Client({ connectionString: db.url });
    // Asks outside any transaction: inside the locker's, pg_stat_activity is a snapshot taken at its
    // first read, and a backend the service's pool opened after it (the second request's) never
    // shows up (CI run of 2026-12-07: timed out waiting for the second request).
    const watcher = new pg.Client({ connectionString: db.url });
    await Promise.all([locker.connect(), watcher.connect()]);
    /** The backend blocked by `pid` (pg_blocking_pids: the lock it waits for is held by `pid`). */
    const blockedBy = (what: string, pid: number) =>
      eventually(what, async () => {
        const { rows } = await watcher.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
          [pid],
        );
        return rows.length === 1 ? rows[0].pid : undefined;
      });
    let answers: LightMyRequestResponse[];
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE community_posts IN SHARE ROW EXCLUSIVE MODE');
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // .then: an inject is sent when it is awaited, and these must be sent now.
      const first = newPost(as('ada', key), payload).then((res) => res);
      const firstPid = await blockedBy('the first request waiting to insert its post', lockerPid);
      const second = newPost(as('ada', key), payload).then((res) => res);
      await blockedBy('the second request waiting on the first one’s claim', firstPid);
      await locker.query('COMMIT');
      answers = await Promise.all([first, second]);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
    expectReplayOf(answers[1], answers[0]);
    expect(await postsTitled(payload.title)).toEqual({ posts: 1, events: 1 });
  });

  it('lets the key be used again once IDEMPOTENCY_KEY_TTL_MS has passed', async () => {
    const key = randomUUID();
    const payload = { title: 'Next day', body: 'Same key, a day later.' };
    const first = await newPost(as('ada', key), payload);
    advance(KEY_TTL_MS - 1);
    expectReplayOf(await newPost(as('ada', key), payload), first);
    advance(1);
    const later = await newPost(as('ada', key), payload);
    expect([later.statusCode, later.headers['idempotent-replayed']]).toEqual([201, undefined]);
    expect(later.json().id).not.toBe(first.json().id);
    expect(await postsTitled(payload.title)).toEqual({ posts: 2, events: 2 });
  });
});

describe('keys are per actor', () => {
  it('never answers one user with another’s stored answer: the same key and request by another user is a write of their own', async () => {
    const key = randomUUID();
    const payload = { title: 'Same key, two users', body: 'Each their own.' };
    const ada = await newPost(as('ada', key), payload);
    const bob = await newPost(as('bob', key), payload);
    expect([bob.statusCode, bob.headers['idempotent-replayed'], bob.json().authorId]).toEqual([201, undefined, 'bob']);
    expect(bob.json().id).not.toBe(ada.json().id);
    // Each replays their own.
    expectReplayOf(await newPost(as('ada', key), payload), ada);
    expectReplayOf(await newPost(as('bob', key), payload), bob);
    // And a keyless identical request by a third user is theirs too.
    const grace = await newPost(as('grace'), payload);
    expect([grace.statusCode, grace.headers['idempotent-replayed'], grace.json().authorId]).toEqual([
      201,
      undefined,
      'grace',
    ]);
    expect(await postsTitled(payload.title)).toEqual({ posts: 3, events: 3 });
  });
});

describe('a client that sends no key (request fingerprint)', () => {
  it('answers an identical request within REQUEST_FINGERPRINT_TTL_MS with the first answer, and writes again after it', async () => {
    const payload = { title: 'Double click', body: 'Clicked twice.' };
    const first = await newPost(as('ada'), payload);
    advance(FINGERPRINT_TTL_MS - 1);
    expectReplayOf(await newPost(as('ada'), payload), first);
    expect(await postsTitled(payload.title)).toEqual({ posts: 1, events: 1 });

    advance(1);
    const later = await newPost(as('ada'), payload);
    expect([later.statusCode, later.headers['idempotent-replayed']]).toEqual([201, undefined]);
    expect(await postsTitled(payload.title)).toEqual({ posts: 2, events: 2 });
    // A request that differs in anything is another request.
    const other = await newPost(as('ada'), { ...payload, body: 'Clicked twice!' });
    expect(other.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers only a repeat of the actor’s latest write: follow, unfollow, follow within the window follows again', async () => {
    const follow = () => app.inject({ method: 'POST', url: '/v1/users/grace/follow', headers: as('ada') });
    const unfollow = () => app.inject({ method: 'DELETE', url: '/v1/users/grace/follow', headers: as('ada') });
    const followed = await follow();
    expectReplayOf(await follow(), followed); // the double click
    expect((await unfollow()).json().following).toBe(false);
    const again = await follow();
    expect([again.statusCode, again.headers['idempotent-replayed'], again.json().following]).toEqual([
      201,
      undefined,
      true,
    ]);
    expect(await rowsOf(`SELECT 1 FROM community_follows WHERE follower_id = 'ada' AND followee_id = 'grace'`)).toBe(1);
    const { rows } = await pool.query<{ event_type: string }>(
      `SELECT event_type FROM outbox_messages
        WHERE aggregate_id = 'grace' AND payload->'data'->>'followerId' = 'ada' ORDER BY id`,
    );
    expect(rows.map((r) => r.event_type)).toEqual(['user.followed', 'user.unfollowed', 'user.followed']);
  });
});

describe('the purge of expired keys', () => {
  it('deletes every expired row, in batches, and keeps the live ones', async () => {
    // Let everything stored so far expire, then store a few live ones.
    advance(KEY_TTL_MS);
    const live = [randomUUID(), randomUUID()];
    for (const key of live) await newPost(as('bob', key), { title: `Live ${key}`, body: 'kept' });
    const expired = await rowsOf('SELECT 1 FROM community_request_keys WHERE expires_at <= $1', [now]);
    expect(expired).toBeGreaterThan(2); // more than one batch of 2

    const attempt = await service.scheduler.runOnce(REQUEST_KEYS_PURGE_JOB, { force: true });
    expect(attempt).toMatchObject({ status: 'ran', outcome: 'succeeded', counts: { deleted: expired } });
    const { rows } = await pool.query<{ key: string }>('SELECT key FROM community_request_keys ORDER BY key');
    expect(rows.map((r) => r.key)).toEqual(live.map((k) => `key:${k}`).sort());
    // The live keys still answer their retries.
    const retry = await newPost(as('bob', live[0]), { title: `Live ${live[0]}`, body: 'kept' });
    expect(retry.headers['idempotent-replayed']).toBe('true');
  });
});

describe('GET /openapi.json', () => {
  it('publishes the Idempotency-Key header, the replay header and the 422 of every write route', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: Array<{ in: string; name: string }>;
            responses: Record<string, { headers?: Record<string, unknown> }>;
          }
        >
      >;
    };
    const writes = [
      ['/v1/users', 'post', '201'],
      ['/v1/users/{userId}/follow', 'post', '201'],
      ['/v1/users/{userId}/follow', 'delete', '200'],
      ['/v1/posts', 'post', '201'],
      ['/v1/posts/{postId}/comments', 'post', '201'],
      ['/v1/reactions', 'post', '201'],
      ['/v1/security-alerts', 'post', '201'],
    ];
    for (const [path, method, success] of writes) {
      const operation = doc.paths[path]?.[method];
      expect({
        path,
        method,
        header: operation?.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key'),
        replayed: Object.keys(operation?.responses[success]?.headers ?? {}),
        reused: '422' in (operation?.responses ?? {}),
      }).toEqual({ path, method, header: true, replayed: ['Idempotent-Replayed'], reused: true });
    }
  });
});
