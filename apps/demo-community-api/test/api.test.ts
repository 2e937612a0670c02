import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { validate } from '@community/contracts';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import type { DemoService } from '../src/service';
import { count, createUsers, eventsOf, recordingLogger, testService } from './helpers';

/** Every write and its events in one transaction; bad input answered 4xx with a reason and nothing written. */
let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;
const log = recordingLogger();

beforeAll(async () => {
  db = await createTestDatabase('demo_api');
  // HTTP only: the service is built but not started, so nothing is relayed to a broker. Fingerprints
  // off: these tests repeat identical requests to see what a route does with a repeat that comes after
  // the fingerprint window (a quiet 200); the window itself is idempotency.test.ts's.
  service = testService(db, { logger: log.logger, env: { REQUEST_FINGERPRINT_TTL_MS: '0' } });
  ({ pool, app } = service);
  await app.ready();
  await createUsers(app, ['ada', 'bob', 'grace', 'carol']);
});

afterAll(async () => {
  // stop() releases what building opened (the broker connection, the pool) even without a start().
  await service.stop();
  await app.close();
  await db.drop();
});

const as = (user: string) => ({ 'x-user-id': user });

async function post(author: string, title = 'Retry storms'): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: as(author),
    payload: { title, body: 'How we stopped ours.' },
  });
  expect(res.statusCode).toBe(201);
  return res.json().id;
}

describe('POST /v1/users', () => {
  it('creates a user with a user.upserted event, is a quiet no-op when nothing changed, and emits again on a change', async () => {
    const body = { id: 'dave', email: 'dave@example.test', displayName: 'Dave Tester', locale: 'id' };
    const created = await app.inject({ method: 'POST', url: '/v1/users', payload: body });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      id: 'dave',
      email: 'dave@example.test',
      displayName: 'Dave Tester',
      locale: 'id',
    });
    const [event] = await eventsOf(pool, created.headers['x-correlation-id']);
    expect(event).toMatchObject({
      event_type: 'user.upserted',
      aggregate_id: 'dave',
      payload: {
        producer: 'community-api',
        data: { userId: 'dave', email: 'dave@example.test', displayName: 'Dave Tester', locale: 'id' },
      },
    });
    expect(validate(event.payload).ok).toBe(true);

    const same = await app.inject({ method: 'POST', url: '/v1/users', payload: body });
    expect(same.statusCode).toBe(200);
    expect(await eventsOf(pool, same.headers['x-correlation-id'])).toEqual([]);

    const changed = await app.inject({ method: 'POST', url: '/v1/users', payload: { ...body, locale: 'en' } });
    expect(changed.statusCode).toBe(200);
    expect((await eventsOf(pool, changed.headers['x-correlation-id'])).map((e) => e.payload.data.locale)).toEqual([
      'en',
    ]);
  });

  it('takes an optional IANA time zone, stored and carried by user.upserted; an unknown zone or an offset is 400', async () => {
    const body = { id: 'tz-user', email: 'tz@example.test', displayName: 'Tz', timezone: 'Asia/Jakarta' };
    const created = await app.inject({ method: 'POST', url: '/v1/users', payload: body });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ id: 'tz-user', timezone: 'Asia/Jakarta' });
    const [event] = await eventsOf(pool, created.headers['x-correlation-id']);
    expect(event.payload.data).toMatchObject({ userId: 'tz-user', timezone: 'Asia/Jakarta' });
    expect(validate(event.payload).ok).toBe(true);
    // A change of zone alone is a change: a new event.
    const moved = await app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: { ...body, timezone: 'Europe/Berlin' },
    });
    expect(moved.statusCode).toBe(200);
    expect((await eventsOf(pool, moved.headers['x-correlation-id'])).map((e) => e.payload.data.timezone)).toEqual([
      'Europe/Berlin',
    ]);
    const outbox = await count(pool, 'outbox_messages');
    for (const timezone of ['Mars/Olympus_Mons', '+07:00']) {
      const bad = await app.inject({ method: 'POST', url: '/v1/users', payload: { ...body, timezone } });
      expect(bad.json()).toMatchObject({ statusCode: 400, code: 'TIMEZONE_INVALID' });
      expect(bad.json().message).toContain(JSON.stringify(timezone));
    }
    expect(await count(pool, 'outbox_messages')).toBe(outbox);
    expect((await pool.query(`SELECT timezone FROM community_users WHERE id = 'tz-user'`)).rows).toEqual([
      { timezone: 'Europe/Berlin' },
    ]);
  });

  it('answers 400 with the reason for an invalid body, 409 for an email in use, and writes nothing', async () => {
    const [users, outbox] = [await count(pool, 'community_users'), await count(pool, 'outbox_messages')];
    const invalid = await app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: { id: 'Eve Smith', email: 'eve@example.test', displayName: 'Eve' },
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringContaining('body/id must match pattern'),
    });
    const noEmail = await app.inject({ method: 'POST', url: '/v1/users', payload: { id: 'eve', displayName: 'Eve' } });
    expect(noEmail.json().message).toBe("body must have required property 'email'");
    const taken = await app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: { id: 'eve', email: 'ada@example.test', displayName: 'Eve' },
    });
    expect(taken.statusCode).toBe(409);
    // 409, and not a word about who holds the address.
    expect(taken.json()).toEqual({
      statusCode: 409,
      code: 'EMAIL_TAKEN',
      error: 'Conflict',
      message: 'The email address is already used by another user',
    });
    expect(taken.body).not.toContain('ada');
    expect([await count(pool, 'community_users'), await count(pool, 'outbox_messages')]).toEqual([users, outbox]);
  });

  it('answers 400, not 500, for text PostgreSQL cannot keep and for a correlation id no event can carry', async () => {
    const [users, outbox] = [await count(pool, 'community_users'), await count(pool, 'outbox_messages')];
    const nul = await app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: { id: 'nul', email: 'nul@example.test', displayName: 'N\u0000' },
    });
    expect(nul.statusCode).toBe(400);
    expect(nul.json().message).toBe('body/displayName must not contain NUL characters or unpaired surrogates');
    const lone = await app.inject({ method: 'POST', url: '/v1/users/ada%00/follow', headers: as('bob') });
    expect(lone.statusCode).toBe(400);
    const longId = await app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: { 'x-correlation-id': 'c'.repeat(257) },
      payload: { id: 'longcorr', email: 'longcorr@example.test', displayName: 'L' },
    });
    expect(longId.statusCode).toBe(400);
    expect(longId.json()).toMatchObject({ code: 'CORRELATION_ID_INVALID' });
    expect([await count(pool, 'community_users'), await count(pool, 'outbox_messages')]).toEqual([users, outbox]);
  });
});

describe('acting users outside production', () => {
  it('takes a user token besides x-user-id, and a token writes only its own profile', async () => {
    const token = { authorization: `Bearer ${app.jwt.sign({ sub: 'frank' })}` };
    const own = await app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: token,
      payload: { id: 'frank', email: 'frank@example.test', displayName: 'Frank' },
    });
    expect(own.statusCode).toBe(201);
    const other = await app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: token,
      payload: { id: 'ada', email: 'frank2@example.test', displayName: 'Ada' },
    });
    expect(other.json()).toMatchObject({ statusCode: 403, code: 'PROFILE_FORBIDDEN' });
    const byHeader = await app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: as('frank'),
      payload: { id: 'ada', email: 'frank2@example.test', displayName: 'Ada' },
    });
    expect(byHeader.json()).toMatchObject({ statusCode: 403, code: 'PROFILE_FORBIDDEN' });
    expect((await pool.query('SELECT email FROM community_users WHERE id = $1', ['ada'])).rows).toEqual([
      { email: 'ada@example.test' },
    ]);
  });
});

describe('POST /v1/posts', () => {
  it('needs a known acting user (x-user-id or a Bearer JWT) and emits post.published under the author', async () => {
    const payload = { title: 'Idempotency keys', body: 'In practice.' };
    expect((await app.inject({ method: 'POST', url: '/v1/posts', payload })).json()).toMatchObject({
      statusCode: 401,
      code: 'ACTOR_REQUIRED',
    });
    expect(
      (await app.inject({ method: 'POST', url: '/v1/posts', headers: as('nobody'), payload })).json(),
    ).toMatchObject({ statusCode: 401, code: 'ACTOR_UNKNOWN' });
    const forged = await app.inject({
      method: 'POST',
      url: '/v1/posts',
      headers: { authorization: 'Bearer not.a.jwt' },
      payload,
    });
    expect(forged.json()).toMatchObject({ statusCode: 401, code: 'TOKEN_INVALID' });

    const token = app.jwt.sign({ sub: 'grace' });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/posts',
      headers: { authorization: `Bearer ${token}` },
      payload,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ authorId: 'grace', title: 'Idempotency keys' });
    const events = await eventsOf(pool, res.headers['x-correlation-id']);
    expect(events).toMatchObject([
      {
        event_type: 'post.published',
        aggregate_id: 'grace',
        payload: {
          data: { postId: res.json().id, authorId: 'grace', title: 'Idempotency keys', excerpt: 'In practice.' },
        },
      },
    ]);
  });
});

describe('POST /v1/posts/:postId/comments', () => {
  it('emits comment.created for the post author and one user.mentioned per distinct mentioned user, never the author', async () => {
    const postId = await post('carol');
    const body = '@Bob thanks! @bob @ada (@GraceHopper?) cc @nobody, mail ada@example.test';
    // Grace's display name is "Grace Tester": @GraceHopper names nobody; @GraceTester would be her.
    const res = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('ada'),
      payload: { body: `${body} @GraceTester` },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().mentionedUserIds).toEqual(['bob', 'grace']);
    const events = await eventsOf(pool, res.headers['x-correlation-id']);
    expect(events.map((e) => [e.event_type, e.aggregate_id])).toEqual([
      ['comment.created', 'carol'],
      ['user.mentioned', 'bob'],
      ['user.mentioned', 'grace'],
    ]);
    expect(events[0].payload.data).toEqual({
      commentId: res.json().id,
      postId,
      postAuthorId: 'carol',
      authorId: 'ada',
      excerpt: expect.stringContaining('@Bob thanks!'),
    });
    expect(events[1].payload.data).toMatchObject({
      commentId: res.json().id,
      postId,
      actorId: 'ada',
      mentionedUserId: 'bob',
    });
    for (const e of events) expect(validate(e.payload).ok).toBe(true);
  });

  it('orders a reply under the parent comment author and carries parentAuthorId', async () => {
    const postId = await post('carol');
    const parent = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('bob'),
      payload: { body: 'First!' },
    });
    const reply = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('ada'),
      payload: { body: 'Welcome', parentCommentId: parent.json().id },
    });
    expect(reply.statusCode).toBe(201);
    const [created] = await eventsOf(pool, reply.headers['x-correlation-id']);
    expect(created).toMatchObject({
      aggregate_id: 'bob',
      payload: { data: { parentCommentId: parent.json().id, parentAuthorId: 'bob', postAuthorId: 'carol' } },
    });
  });

  it('answers 404 for an unknown post or parent, 400 for an empty body, and writes nothing', async () => {
    const postId = await post('carol');
    const otherPostId = await post('bob');
    const foreign = await app.inject({
      method: 'POST',
      url: `/v1/posts/${otherPostId}/comments`,
      headers: as('bob'),
      payload: { body: 'elsewhere' },
    });
    const [comments, outbox] = [await count(pool, 'community_comments'), await count(pool, 'outbox_messages')];

    const noPost = await app.inject({
      method: 'POST',
      url: '/v1/posts/no-such-post/comments',
      headers: as('ada'),
      payload: { body: 'hi @bob' },
    });
    expect(noPost.json()).toMatchObject({
      statusCode: 404,
      code: 'POST_NOT_FOUND',
      message: 'Post "no-such-post" not found',
    });
    const wrongParent = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('ada'),
      payload: { body: 'hi', parentCommentId: foreign.json().id },
    });
    expect(wrongParent.json()).toMatchObject({ statusCode: 404, code: 'PARENT_COMMENT_NOT_FOUND' });
    const empty = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('ada'),
      payload: { body: '' },
    });
    expect(empty.json()).toMatchObject({ statusCode: 400, message: 'body/body must NOT have fewer than 1 characters' });
    expect([await count(pool, 'community_comments'), await count(pool, 'outbox_messages')]).toEqual([comments, outbox]);
  });
});

describe('follows', () => {
  it('emits user.followed and user.unfollowed under the followee, once per actual change', async () => {
    const follow = await app.inject({ method: 'POST', url: '/v1/users/grace/follow', headers: as('carol') });
    expect(follow.statusCode).toBe(201);
    expect(await eventsOf(pool, follow.headers['x-correlation-id'])).toMatchObject([
      {
        event_type: 'user.followed',
        aggregate_id: 'grace',
        payload: { data: { followerId: 'carol', followeeId: 'grace' } },
      },
    ]);
    const again = await app.inject({ method: 'POST', url: '/v1/users/grace/follow', headers: as('carol') });
    expect(again.statusCode).toBe(200);
    expect(await eventsOf(pool, again.headers['x-correlation-id'])).toEqual([]);

    const unfollow = await app.inject({ method: 'DELETE', url: '/v1/users/grace/follow', headers: as('carol') });
    expect(unfollow.json()).toEqual({ followerId: 'carol', followeeId: 'grace', following: false });
    expect(await eventsOf(pool, unfollow.headers['x-correlation-id'])).toMatchObject([
      { event_type: 'user.unfollowed', aggregate_id: 'grace' },
    ]);
    const unfollowAgain = await app.inject({ method: 'DELETE', url: '/v1/users/grace/follow', headers: as('carol') });
    expect(await eventsOf(pool, unfollowAgain.headers['x-correlation-id'])).toEqual([]);
    expect(await count(pool, 'community_follows')).toBe(0);
  });

  it('refuses following yourself (400) or nobody (404)', async () => {
    expect(
      (await app.inject({ method: 'POST', url: '/v1/users/ada/follow', headers: as('ada') })).json(),
    ).toMatchObject({ statusCode: 400, code: 'SELF_FOLLOW' });
    expect(
      (await app.inject({ method: 'POST', url: '/v1/users/ghost/follow', headers: as('ada') })).json(),
    ).toMatchObject({ statusCode: 404, code: 'USER_NOT_FOUND' });
  });
});

describe('POST /v1/reactions', () => {
  it('resolves the target author, emits reaction.added under them once, and 404s an unknown target', async () => {
    const postId = await post('bob');
    const comment = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as('carol'),
      payload: { body: 'nice' },
    });
    const payload = { targetType: 'comment', targetId: comment.json().id, emoji: '🚀' };
    const res = await app.inject({ method: 'POST', url: '/v1/reactions', headers: as('ada'), payload });
    expect(res.statusCode).toBe(201);
    expect(await eventsOf(pool, res.headers['x-correlation-id'])).toMatchObject([
      {
        event_type: 'reaction.added',
        aggregate_id: 'carol',
        payload: {
          data: {
            reactionId: res.json().id,
            actorId: 'ada',
            targetType: 'comment',
            targetAuthorId: 'carol',
            emoji: '🚀',
            // The comment's post: deleting the post withdraws this reaction's notification too.
            postId,
          },
        },
      },
    ]);
    const again = await app.inject({ method: 'POST', url: '/v1/reactions', headers: as('ada'), payload });
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(res.json().id);
    expect(await eventsOf(pool, again.headers['x-correlation-id'])).toEqual([]);

    const missing = await app.inject({
      method: 'POST',
      url: '/v1/reactions',
      headers: as('ada'),
      payload: { ...payload, targetType: 'post' },
    });
    expect(missing.json()).toMatchObject({ statusCode: 404, code: 'TARGET_NOT_FOUND' });
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/reactions',
      headers: as('ada'),
      payload: { ...payload, targetType: 'user' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain('body/targetType');
  });
});

describe('deletions (retraction events)', () => {
  const comment = async (author: string, postId: string, body: string, parentCommentId?: string) => {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/posts/${postId}/comments`,
      headers: as(author),
      payload: { body, ...(parentCommentId ? { parentCommentId } : {}) },
    });
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };
  const react = async (actor: string, targetType: 'post' | 'comment', targetId: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/reactions',
      headers: as(actor),
      payload: { targetType, targetId, emoji: '👍' },
    });
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };
  const rows = async (sql: string, values: unknown[]) => (await pool.query(sql, values)).rows;

  it('DELETE /v1/comments/:id: only the author; the comment and its replies go with their reactions, a comment.deleted each (valid), under whom each creation notified', async () => {
    const postId = await post('bob');
    const top = await comment('carol', postId, 'top @ada');
    const reply = await comment('grace', postId, 'a reply', top);
    const other = await comment('ada', postId, 'stays');
    await react('bob', 'comment', reply);

    const stranger = await app.inject({ method: 'DELETE', url: `/v1/comments/${top}`, headers: as('grace') });
    expect(stranger.json()).toMatchObject({ statusCode: 403, code: 'DELETE_FORBIDDEN' });
    expect(await eventsOf(pool, stranger.headers['x-correlation-id'])).toEqual([]);

    const res = await app.inject({ method: 'DELETE', url: `/v1/comments/${top}`, headers: as('carol') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: top, postId, deleted: true, commentIds: [top, reply] });
    const events = await eventsOf(pool, res.headers['x-correlation-id']);
    expect(events.map((e) => [e.event_type, e.aggregate_id, e.payload.data])).toEqual([
      ['comment.deleted', 'bob', { commentId: top, postId, authorId: 'carol' }],
      ['comment.deleted', 'carol', { commentId: reply, postId, authorId: 'grace' }],
    ]);
    for (const e of events) expect(validate(e.payload).ok).toBe(true);
    expect(await rows('SELECT id FROM community_comments WHERE post_id = $1', [postId])).toEqual([{ id: other }]);
    expect(await rows(`SELECT 1 FROM community_reactions WHERE target_id = $1`, [reply])).toEqual([]);

    const gone = await app.inject({ method: 'DELETE', url: `/v1/comments/${top}`, headers: as('carol') });
    expect(gone.json()).toMatchObject({ statusCode: 404, code: 'COMMENT_NOT_FOUND' });
  });

  it('DELETE /v1/posts/:id: only the author; one post.deleted, and its comments and every reaction on it or them go', async () => {
    const postId = await post('bob');
    const c = await comment('carol', postId, 'first');
    await comment('ada', postId, 'second', c);
    await react('ada', 'post', postId);
    await react('grace', 'comment', c);

    const stranger = await app.inject({ method: 'DELETE', url: `/v1/posts/${postId}`, headers: as('carol') });
    expect(stranger.json()).toMatchObject({ statusCode: 403, code: 'DELETE_FORBIDDEN' });
    const res = await app.inject({ method: 'DELETE', url: `/v1/posts/${postId}`, headers: as('bob') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: postId, deleted: true, comments: 2, reactions: 2 });
    const events = await eventsOf(pool, res.headers['x-correlation-id']);
    expect(events.map((e) => [e.event_type, e.aggregate_id, e.payload.data])).toEqual([
      ['post.deleted', 'bob', { postId, authorId: 'bob' }],
    ]);
    expect(validate(events[0].payload).ok).toBe(true);
    expect(await rows('SELECT 1 FROM community_posts WHERE id = $1', [postId])).toEqual([]);
    expect(await rows('SELECT 1 FROM community_comments WHERE post_id = $1', [postId])).toEqual([]);
    expect(await rows('SELECT 1 FROM community_reactions WHERE target_id = ANY($1::text[])', [[postId, c]])).toEqual(
      [],
    );
    const gone = await app.inject({ method: 'DELETE', url: `/v1/posts/${postId}`, headers: as('bob') });
    expect(gone.json()).toMatchObject({ statusCode: 404, code: 'POST_NOT_FOUND' });
  });

  it('DELETE /v1/reactions/:id: only the one who reacted; reaction.removed under the target author; then 404', async () => {
    const postId = await post('carol');
    const reaction = await react('ada', 'post', postId);
    const stranger = await app.inject({ method: 'DELETE', url: `/v1/reactions/${reaction}`, headers: as('carol') });
    expect(stranger.json()).toMatchObject({ statusCode: 403, code: 'DELETE_FORBIDDEN' });
    const res = await app.inject({ method: 'DELETE', url: `/v1/reactions/${reaction}`, headers: as('ada') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: reaction,
      actorId: 'ada',
      targetType: 'post',
      targetId: postId,
      emoji: '👍',
      deleted: true,
    });
    const events = await eventsOf(pool, res.headers['x-correlation-id']);
    expect(events.map((e) => [e.event_type, e.aggregate_id, e.payload.data])).toEqual([
      ['reaction.removed', 'carol', { reactionId: reaction, actorId: 'ada', targetType: 'post', targetId: postId }],
    ]);
    const gone = await app.inject({ method: 'DELETE', url: `/v1/reactions/${reaction}`, headers: as('ada') });
    expect(gone.json()).toMatchObject({ statusCode: 404, code: 'REACTION_NOT_FOUND' });
    // Without an acting user: 401, nothing deleted.
    const anonymous = await app.inject({ method: 'DELETE', url: `/v1/posts/${postId}` });
    expect(anonymous.statusCode).toBe(401);
    expect(await rows('SELECT 1 FROM community_posts WHERE id = $1', [postId])).toHaveLength(1);
  });
});

describe('POST /v1/security-alerts', () => {
  it('records the alert with a security.alert event under the user; an unknown user is 404', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/security-alerts',
      payload: { userId: 'bob', kind: 'new-login', detail: 'Firefox on Linux' },
    });
    expect(res.statusCode).toBe(201);
    expect(await eventsOf(pool, res.headers['x-correlation-id'])).toMatchObject([
      {
        event_type: 'security.alert',
        aggregate_id: 'bob',
        payload: { data: { alertId: res.json().id, userId: 'bob', kind: 'new-login' } },
      },
    ]);
    expect(
      (
        await app.inject({
          method: 'POST',
          url: '/v1/security-alerts',
          payload: { userId: 'ghost', kind: 'x', detail: '' },
        })
      ).statusCode,
    ).toBe(404);
  });

  it('keeps the write and its event together: when the outbox insert fails, the alert is not stored either', async () => {
    // Inject the fault in the database itself: the outbox refuses this producer's security alerts.
    await pool.query(`CREATE FUNCTION refuse_alerts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.event_type = 'security.alert' THEN RAISE EXCEPTION 'outbox unavailable'; END IF; RETURN NEW; END $$`);
    await pool.query(
      'CREATE TRIGGER refuse_alerts BEFORE INSERT ON outbox_messages FOR EACH ROW EXECUTE FUNCTION refuse_alerts()',
    );
    try {
      const before = await count(pool, 'community_security_alerts');
      const res = await app.inject({
        method: 'POST',
        url: '/v1/security-alerts',
        payload: { userId: 'bob', kind: 'new-login', detail: 'Chrome' },
      });
      expect(res.statusCode).toBe(500);
      expect(await count(pool, 'community_security_alerts')).toBe(before);
      // A generic coded body (the database's words stay out of it); the error itself is in the log under the request id.
      expect(res.json()).toEqual({
        statusCode: 500,
        code: 'INTERNAL_ERROR',
        error: 'Internal Server Error',
        message: expect.stringContaining('logged under this request id'),
      });
      expect(res.body).not.toContain('outbox unavailable');
      const logged = log.lines.find((l) => l.reqId === res.headers['x-correlation-id'] && l.code === 'INTERNAL_ERROR');
      expect(logged).toMatchObject({ level: 50, err: { message: expect.stringContaining('outbox unavailable') } });
    } finally {
      await pool.query('DROP TRIGGER refuse_alerts ON outbox_messages; DROP FUNCTION refuse_alerts()');
    }
  });
});
