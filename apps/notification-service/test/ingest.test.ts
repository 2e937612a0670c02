import { randomUUID } from 'node:crypto';
import { eventually } from '@community/testing';
import { bearer, countersAndRecount, event, mention, startHarness, type Harness } from './harness';

/**
 * The consumers end to end: events published over AMQP → rows, counters and notification.created, with
 * every kind of duplicate, self-actions, the mention-beats-reply rule and preferences.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('ingest');
});
afterAll(async () => h.close());

function requireMessaging() {
  if (!h.messaging) throw new Error('harness without AMQP');
  return h.messaging;
}
function requireVhost() {
  if (!h.vhost) throw new Error('harness without AMQP');
  return h.vhost;
}

/** Acked messages so far, by outcome (processed / duplicate / skipped), from the runtime's metrics. */
async function acked(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await requireMessaging().metrics.succeeded.get()).values)
    out[String(v.labels.outcome)] = (out[String(v.labels.outcome)] ?? 0) + v.value;
  return out;
}
const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

async function publishAndWait(...events: Parameters<Harness['publish']>[0][]): Promise<Record<string, number>> {
  const before = await acked();
  for (const e of events) await h.publish(e);
  await eventually(
    `${events.length} messages acked`,
    async () => total(await acked()) - total(before) >= events.length,
    10_000,
    20,
  );
  const after = await acked();
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]));
}

async function rowsOf(userId: string) {
  const { rows } = await h.pool.query(
    'SELECT type, idempotency_key, in_app, email_channel FROM notification_items WHERE user_id = $1 ORDER BY created_at, id',
    [userId],
  );
  return rows as Array<{ type: string; idempotency_key: string; in_app: boolean; email_channel: string }>;
}

/**
 * The notification.created messages `userId` was announced, one per notification (a re-emission is
 * the same message again), once `expected` of them reached the broker. Each is confirmed before its
 * source is acked; the test's own consumer may still be receiving it.
 */
async function announcedTo(userId: string, expected: number) {
  const distinct = () => [...new Map(h.createdFor(userId).map((d) => [d.notificationId, d])).values()];
  await eventually(
    `${expected} notification.created for ${userId}`,
    async () => distinct().length >= expected,
    10_000,
    20,
  );
  return distinct();
}

async function unreadCount(userId: string): Promise<number> {
  const res = await h.app.inject({
    url: `/v1/users/${userId}/notifications/unread-count`,
    headers: bearer(h.token(userId)),
  });
  expect(res.statusCode).toBe(200);
  return res.json().count;
}

it('a redelivered event and the same fact under a new event id make one notification, one count, one notification.created', async () => {
  const user = `u-${randomUUID()}`;
  const first = mention('c-dup', 'actor-1', user);
  const sameFactNewId = mention('c-dup', 'actor-1', user);
  const outcomes = await publishAndWait(first, first, sameFactNewId);

  expect(outcomes).toMatchObject({ processed: 1, duplicate: 2 });
  expect(await rowsOf(user)).toEqual([
    { type: 'mention', idempotency_key: `mention:c-dup:${user}`, in_app: true, email_channel: 'immediate' },
  ]);
  expect(await unreadCount(user)).toBe(1);
  expect(await announcedTo(user, 1)).toHaveLength(1);
  // The event names the row it announces and has the row's id as its own. The redelivery announced
  // it again (its first delivery may have died before the confirms), as the very same message.
  const { rows } = await h.pool.query('SELECT id FROM notification_items WHERE user_id = $1', [user]);
  const copies = h.created.filter((e) => e.data.userId === user);
  expect(copies.length).toBeGreaterThanOrEqual(1);
  for (const copy of copies) {
    expect(copy.id).toBe(rows[0].id);
    expect(copy.data.notificationId).toBe(rows[0].id);
    expect(copy).toEqual(copies[0]);
  }
});

it('nobody is notified of their own action', async () => {
  const me = `u-${randomUUID()}`;
  const outcomes = await publishAndWait(
    mention('c-self', me, me),
    event('comment.created', {
      commentId: 'c-own',
      postId: 'p-own',
      postAuthorId: me,
      authorId: me,
      parentCommentId: 'c-0',
      parentAuthorId: me,
      excerpt: 'me',
    }),
    event('reaction.added', {
      reactionId: randomUUID(),
      actorId: me,
      targetType: 'post',
      targetId: 'p-own',
      targetAuthorId: me,
      emoji: '🎉',
    }),
    event('user.followed', { followerId: me, followeeId: me }),
  );
  expect(outcomes).toMatchObject({ skipped: 4 });
  expect(await rowsOf(me)).toEqual([]);
  expect(await unreadCount(me)).toBe(0);
});

it('a comment notifies the parent author (reply) and the post author (comment), once each', async () => {
  const [author, parent, postAuthor] = [`u-${randomUUID()}`, `u-${randomUUID()}`, `u-${randomUUID()}`];
  const created = event('comment.created', {
    commentId: 'c-r1',
    postId: 'p-1',
    postAuthorId: postAuthor,
    authorId: author,
    parentCommentId: 'c-p',
    parentAuthorId: parent,
    excerpt: 'hi',
  });
  await publishAndWait(created, { ...created, id: randomUUID() });
  expect((await rowsOf(parent)).map((r) => r.type)).toEqual(['reply']);
  expect((await rowsOf(postAuthor)).map((r) => r.type)).toEqual(['comment']);
});

describe('a comment that both replies to X and mentions X gives X one notification, a mention, in either order', () => {
  it.each([
    ['mention first', true],
    ['reply first', false],
  ])('%s', async (_name, mentionFirst) => {
    const [author, x] = [`u-${randomUUID()}`, `u-${randomUUID()}`];
    const commentId = `c-${randomUUID()}`;
    const m = mention(commentId, author, x);
    const reply = event('comment.created', {
      commentId,
      postId: 'p-1',
      postAuthorId: author,
      authorId: author,
      parentCommentId: 'c-parent',
      parentAuthorId: x,
      excerpt: `@${x} yes`,
    });
    // The two travel on different queues: wait for the first before sending the second.
    await publishAndWait(mentionFirst ? m : reply);
    await publishAndWait(mentionFirst ? reply : m);

    expect(await rowsOf(x)).toEqual([
      expect.objectContaining({ type: 'mention', idempotency_key: `mention:${commentId}:${x}` }),
    ]);
    expect(await unreadCount(x)).toBe(1);
    // The mention's notification.created either way; the reply's only where it came first (already
    // announced, it cannot be called back). test/slot-order.test.ts compares the orders in full.
    expect((await announcedTo(x, mentionFirst ? 1 : 2)).map((e) => e.type)).toEqual(
      mentionFirst ? ['mention'] : ['reply', 'mention'],
    );
  });
});

it('preferences decide in-app visibility and the emitted emailChannel; a security alert ignores them', async () => {
  const user = `u-${randomUUID()}`;
  const put = await h.app.inject({
    method: 'PUT',
    url: `/v1/users/${user}/preferences`,
    headers: bearer(h.token(user)),
    payload: {
      preferences: {
        mention: { email: 'off' },
        follow: { inApp: false, email: 'immediate' },
        reaction: { inApp: false, email: 'off' },
      },
    },
  });
  expect(put.statusCode).toBe(200);
  // Even a stored row that says "off" for security alerts (the API refuses to write one) is ignored.
  await h.pool.query(
    "INSERT INTO notification_preferences (user_id, type, in_app, email) VALUES ($1, 'security_alert', false, 'off')",
    [user],
  );
  const alert = event('security.alert', {
    alertId: randomUUID(),
    userId: user,
    kind: 'new_login',
    detail: 'Login from a new device',
  });
  await publishAndWait(
    mention(`c-${randomUUID()}`, 'actor-2', user),
    event('user.followed', { followerId: 'actor-3', followeeId: user }),
    event('reaction.added', {
      reactionId: randomUUID(),
      actorId: 'actor-4',
      targetType: 'comment',
      targetId: 'c-9',
      targetAuthorId: user,
      emoji: '👍',
    }),
    alert,
  );

  const emitted = Object.fromEntries((await announcedTo(user, 3)).map((e) => [e.type, e.emailChannel]));
  expect(emitted).toEqual({ mention: 'off', follow: 'immediate', security_alert: 'immediate' }); // reaction: neither channel
  const list = await h.app.inject({ url: `/v1/users/${user}/notifications`, headers: bearer(h.token(user)) });
  expect(
    list
      .json()
      .items.map((i: { type: string }) => i.type)
      .sort(),
  ).toEqual(['mention', 'security_alert']); // follow is email-only
  expect(await unreadCount(user)).toBe(2);

  // What the email-service receives, through the broker.
  const delivered = await eventually('notification.created for the alert on email-service.send', async () => {
    const got = (await requireVhost().take('email-service.send', 200)).map((m) => ({
      ...JSON.parse(m.body),
      headers: m.properties.headers,
    }));
    return got.find((e) => e.data.userId === user && e.data.type === 'security_alert');
  });
  expect(delivered).toMatchObject({
    type: 'notification.created',
    producer: 'notification-service',
    correlationId: alert.correlationId,
    data: { emailChannel: 'immediate' },
  });
  expect(delivered.headers).toMatchObject({ 'notification-type': 'security_alert' });
  // The critical email lane got this user's security alert and none of the other notifications.
  const critical = (await requireVhost().take('email-service.send-critical', 200)).map((m) => ({
    ...JSON.parse(m.body),
    headers: m.properties.headers,
  }));
  const mine = critical.filter((e) => e.data.userId === user);
  expect(mine.map((e) => e.data.type)).toEqual(['security_alert']);
  expect(mine[0].headers).toMatchObject({ 'notification-type': 'security_alert' });
});

it('the same preference for another user leaves the defaults alone', async () => {
  const user = `u-${randomUUID()}`;
  await publishAndWait(
    mention(`c-${randomUUID()}`, 'actor-2', user),
    event('user.followed', { followerId: 'actor-3', followeeId: user }),
  );
  const emitted = Object.fromEntries((await announcedTo(user, 2)).map((e) => [e.type, e.emailChannel]));
  expect(emitted).toEqual({ mention: 'immediate', follow: 'digest' });
});

it('actor names come from user.upserted (newest wins); an actor never seen is not an error', async () => {
  const [actor, user] = [`u-${randomUUID()}`, `u-${randomUUID()}`];
  const newer = event('user.upserted', { userId: actor, email: 'ada@example.org', displayName: 'Ada L.' });
  const older = {
    ...event('user.upserted', { userId: actor, email: 'ada@example.org', displayName: 'Old Name' }),
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
  };
  await publishAndWait(newer);
  await publishAndWait(older);
  await publishAndWait(mention(`c-${randomUUID()}`, actor, user), mention(`c-${randomUUID()}`, 'never-seen', user));

  const list = await h.app.inject({ url: `/v1/users/${user}/notifications`, headers: bearer(h.token(user)) });
  const names = list.json().items.map((i: { actorId: string; actorName: string | null }) => [i.actorId, i.actorName]);
  expect(names).toEqual(
    expect.arrayContaining([
      [actor, 'Ada L.'],
      ['never-seen', null],
    ]),
  );
});

it('after all of the above, every counter equals a recount of its rows', async () => {
  const counters = await countersAndRecount(h.pool);
  expect(counters.length).toBeGreaterThan(5);
  for (const c of counters) expect(c).toEqual({ ...c, counter: c.recount });
});
