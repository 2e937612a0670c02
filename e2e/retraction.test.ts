import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testRedisPrefix,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { appsEnv, explainedBy, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * Retraction through the public contract, as a user notices it (docs/NOTIFICATIONS.md "Retraction"):
 * content deleted on the community API (its DELETE routes, each emitting its retraction event) takes
 * away what it caused: the inbox item and its unread count (notification-service), the follower's
 * feed entry (feed-service). Separate processes, as `npm start` runs them.
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};

beforeAll(async () => {
  [vhost, db, smtp] = await Promise.all([
    createTestVhost('e2e-retraction'),
    createTestDatabase('e2e_retraction'),
    startSmtpSink(),
  ]);
  const [api, notifications, email, feed] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env = {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
    FEED_REDIS_PREFIX: testRedisPrefix('e2e-retraction'),
  };
  // notification-service first: its queues must exist before the first event is published.
  apps.notifications = await startApp('notification-service', notifications, env);
  [apps.email, apps.api, apps.feed] = await Promise.all([
    startApp('email-service', email, env),
    startApp('demo-community-api', api, env),
    startApp('feed-service', feed, env),
  ]);
  for (const id of ['ada', 'bob', 'cy'])
    expect(
      (await http('POST', `${apps.api.url}/v1/users`, { id, email: `${id}@example.test`, displayName: id })).status,
    ).toBe(201);
}, 90_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

const token = (userId: string) => ({ authorization: `Bearer ${jwt(SECRET, { sub: userId })}` });
const as = (userId: string) => ({ 'x-user-id': userId });

/** What the user sees: the inbox items (type and resource) and the unread count. */
async function seen(userId: string): Promise<{ items: string[]; unread: number }> {
  const [list, count] = await Promise.all([
    http<{ items: Array<{ type: string; resourceId: string }> }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications?limit=100`,
      undefined,
      token(userId),
    ),
    http<{ count: number }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications/unread-count`,
      undefined,
      token(userId),
    ),
  ]);
  return { items: list.body.items.map((i) => `${i.type} ${i.resourceId}`).sort(), unread: count.body.count };
}

async function feedOf(userId: string): Promise<string[]> {
  const res = await http<{ items: Array<{ postId: string }> }>(
    'GET',
    `${apps.feed.url}/v1/users/${userId}/feed?limit=100`,
    undefined,
    token(userId),
  );
  return res.status === 200 ? res.body.items.map((p) => p.postId) : [];
}

it(
  'a deleted comment, reaction and post take their notifications, unread counts and feed entries with them',
  () =>
    explainedBy(Object.values(apps), async () => {
      expect((await http('POST', `${apps.api.url}/v1/users/ada/follow`, undefined, as('bob'))).status).toBe(201);
      await eventually(
        'bob follows ada (the follow notification)',
        async () => (await seen('ada')).unread === 1,
        30_000,
      );
      await feedOf('bob'); // read once: bob's feed is live from now on
      const post = await http<{ id: string }>('POST', `${apps.api.url}/v1/posts`, { title: 'T', body: 'B' }, as('ada'));
      expect(post.status).toBe(201);
      const postId = post.body.id;
      const comment = await http<{ id: string }>(
        'POST',
        `${apps.api.url}/v1/posts/${postId}/comments`,
        { body: 'hello @cy' },
        as('bob'),
      );
      const reaction = await http<{ id: string }>(
        'POST',
        `${apps.api.url}/v1/reactions`,
        { targetType: 'post', targetId: postId, emoji: '🎉' },
        as('cy'),
      );
      const commentId = comment.body.id;
      await eventually(
        'the comment, the mention, the reaction and the feed entry',
        async () => {
          const [ada, cy, feed] = await Promise.all([seen('ada'), seen('cy'), feedOf('bob')]);
          return ada.unread === 3 && cy.unread === 1 && feed.includes(postId);
        },
        30_000,
      );
      expect(await seen('ada')).toEqual({
        items: [`comment ${commentId}`, `follow bob`, `reaction ${postId}`].sort(),
        unread: 3,
      });

      // bob deletes his comment: ada's comment notification and cy's mention go.
      expect((await http('DELETE', `${apps.api.url}/v1/comments/${commentId}`, undefined, as('bob'))).status).toBe(200);
      await eventually('the comment withdrawn', async () => (await seen('cy')).unread === 0, 30_000);
      expect(await seen('cy')).toEqual({ items: [], unread: 0 });
      await eventually('ada: the comment gone', async () => (await seen('ada')).unread === 2, 30_000);

      // cy takes the reaction back.
      const removed = await http('DELETE', `${apps.api.url}/v1/reactions/${reaction.body.id}`, undefined, as('cy'));
      expect(removed.status).toBe(200);
      await eventually('the reaction withdrawn', async () => (await seen('ada')).unread === 1, 30_000);
      expect(await seen('ada')).toEqual({ items: ['follow bob'], unread: 1 });

      // ada deletes the post: out of bob's feed.
      expect((await http('DELETE', `${apps.api.url}/v1/posts/${postId}`, undefined, as('ada'))).status).toBe(200);
      await eventually('the post out of the feed', async () => !(await feedOf('bob')).includes(postId), 30_000);
    }),
  120_000,
);
