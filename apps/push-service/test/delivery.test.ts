import { buildEvent } from '@community/contracts';
import { eventually } from '@community/testing';
import { topicFor } from '../src/domain/delivery';
import { DEV_VAPID_PUBLIC_KEY } from '../src/config';
import { bearer, notificationCreated, PUBLIC_BASE_URL, startHarness, withdrawn, type Harness } from './support/harness';
import { TestPushServer } from './support/push-server';

// Web Push delivery against the real broker and Postgres and a push service of the test's own,
// which verifies every request's VAPID token and decrypts its payload with the subscription's keys.
let h: Harness;
let push: TestPushServer;

beforeAll(async () => {
  push = await new TestPushServer().start();
  h = await startHarness('delivery');
}, 60_000);

afterAll(async () => {
  await h?.close();
  await push?.close();
});

const ledger = async (key: string) =>
  (
    await h.svc.pool.query<{ state: string; attempts: number; last_status: number | null; last_error: string | null }>(
      `SELECT state::text, attempts, last_status, last_error FROM push_deliveries WHERE idempotency_key = $1`,
      [key],
    )
  ).rows;

it('pushes once per notification, even when notification.created arrives twice: VAPID-signed, encrypted, with Topic, TTL and Urgency', async () => {
  const sub = await h.subscribe(push, 'ada');
  const event = notificationCreated({ userId: 'ada', type: 'mention', excerpt: 'What do you think, <@ada>?' });
  // The same notification again: a redelivery (same event) and a producer retry (a new event id).
  const again = buildEvent('notification.created', event.data, { producer: 'notification-service' });
  await h.publishAndWait(event, event, again);
  await eventually('sent', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'sent');

  const got = push.for(sub);
  expect(got).toHaveLength(1);
  expect(JSON.parse(got[0].plaintext)).toEqual({
    title: 'Someone mentioned you in a comment',
    body: 'What do you think, <@ada>?',
    url: `${PUBLIC_BASE_URL}/notifications/${event.data.notificationId}`,
    tag: topicFor(event.data.idempotencyKey),
    notificationId: event.data.notificationId,
    type: 'mention',
  });
  // Escaped on the wire: no raw < or > in the JSON text.
  expect(got[0].plaintext).not.toMatch(/[<>]/);
  expect(got[0].vapid.publicKey).toBe(DEV_VAPID_PUBLIC_KEY);
  expect(got[0].vapid.claims).toMatchObject({ aud: new URL(sub.endpoint).origin, sub: h.config.VAPID_SUBJECT });
  expect(got[0].vapid.claims.exp * 1000).toBeGreaterThan(Date.now());
  expect(got[0].headers).toMatchObject({
    ttl: '86400',
    urgency: 'normal',
    topic: topicFor(event.data.idempotencyKey),
    'content-encoding': 'aes128gcm',
  });
  expect(await ledger(event.data.idempotencyKey)).toEqual([
    { state: 'sent', attempts: 1, last_status: 201, last_error: null },
  ]);
  expect(push.refused).toEqual([]);
});

it("a group's members: one push each, the latest member's excerpt and the group's count, with the group's Topic and tag", async () => {
  const sub = await h.subscribe(push, 'ana');
  const groupKey = 'reaction:post:p-7:2026-12-04';
  // Reactions push only when the user turned their push on.
  const first = notificationCreated({
    userId: 'ana',
    type: 'reaction',
    resourceType: 'post',
    push: true,
    groupKey,
    excerpt: '👍',
  });
  const second = notificationCreated({
    userId: 'ana',
    type: 'reaction',
    resourceType: 'post',
    push: true,
    groupKey,
    actorId: 'cy',
    excerpt: '🎉',
  });
  const alone = notificationCreated({ userId: 'ana', type: 'mention' });
  await h.publishAndWait(first);
  await eventually('first sent', async () => (await ledger(first.data.idempotencyKey))[0]?.state === 'sent');
  await h.publishAndWait(second, alone);
  await eventually('all sent', async () => {
    for (const e of [second, alone]) if ((await ledger(e.data.idempotencyKey))[0]?.state !== 'sent') return false;
    return true;
  });

  const got = push.for(sub);
  expect(got).toHaveLength(3);
  const byId = (e: typeof first) => got.find((r) => JSON.parse(r.plaintext).notificationId === e.data.notificationId);
  const [a, b, c] = [byId(first), byId(second), byId(alone)];
  const groupTopic = topicFor(groupKey);
  expect(a?.headers.topic).toBe(groupTopic);
  expect(b?.headers.topic).toBe(groupTopic);
  expect(JSON.parse(a?.plaintext ?? '')).toMatchObject({
    tag: groupTopic,
    title: 'Someone reacted to your post',
    body: '👍',
  });
  // The second member's push counts the group so far (test/grouped.test.ts), with its own excerpt.
  expect(JSON.parse(b?.plaintext ?? '')).toEqual({
    title: '2 people reacted to your post',
    body: '🎉',
    url: `${PUBLIC_BASE_URL}/notifications/${second.data.notificationId}`,
    tag: groupTopic,
    notificationId: second.data.notificationId,
    type: 'reaction',
  });
  // An ungrouped notification keeps its own.
  expect(c?.headers.topic).toBe(topicFor(alone.data.idempotencyKey));
  expect(JSON.parse(c?.plaintext ?? '').tag).toBe(topicFor(alone.data.idempotencyKey));
});

it("a push to each of the user's browsers, and none to anyone else's", async () => {
  const one = await h.subscribe(push, 'bea');
  const two = await h.subscribe(push, 'bea');
  const other = await h.subscribe(push, 'cy');
  const event = notificationCreated({ userId: 'bea', type: 'reply' });
  await h.publishAndWait(event);
  await eventually('both sent', async () => (await ledger(event.data.idempotencyKey)).every((r) => r.state === 'sent'));
  expect([push.for(one).length, push.for(two).length, push.for(other).length]).toEqual([1, 1, 0]);
});

it('410 removes the subscription (and its row says gone)', async () => {
  const sub = await h.subscribe(push, 'dee', [{ status: 410 }]);
  const event = notificationCreated({ userId: 'dee' });
  await h.publishAndWait(event);
  await eventually('gone', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'gone');
  const { rows } = await h.svc.pool.query(`SELECT 1 FROM push_subscriptions WHERE endpoint = $1`, [sub.endpoint]);
  expect(rows).toEqual([]);
  expect(await ledger(event.data.idempotencyKey)).toEqual([
    { state: 'gone', attempts: 1, last_status: 410, last_error: 'subscription_gone' },
  ]);
  // The next notification finds no subscription: nothing is sent to the endpoint again.
  const next = notificationCreated({ userId: 'dee' });
  await h.publishAndWait(next);
  expect(await ledger(next.data.idempotencyKey)).toEqual([]);
  expect(push.for(sub)).toHaveLength(1);
});

it('404 removes the subscription too', async () => {
  const sub = await h.subscribe(push, 'dex', [{ status: 404 }]);
  const event = notificationCreated({ userId: 'dex' });
  await h.publishAndWait(event);
  await eventually('gone', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'gone');
  expect((await h.svc.pool.query(`SELECT 1 FROM push_subscriptions WHERE endpoint = $1`, [sub.endpoint])).rows).toEqual(
    [],
  );
});

it('429 with Retry-After is retried after it, then delivered', async () => {
  const sub = await h.subscribe(push, 'eve', [{ status: 429, headers: { 'retry-after': '1' } }]);
  const event = notificationCreated({ userId: 'eve' });
  await h.publishAndWait(event);
  await eventually('sent', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'sent');
  const got = push.for(sub);
  expect(got.map((r) => r.answered)).toEqual([429, 201]);
  // The same notification both times: same topic, same payload.
  expect(got[1].headers.topic).toBe(got[0].headers.topic);
  expect(got[1].plaintext).toBe(got[0].plaintext);
  expect(await ledger(event.data.idempotencyKey)).toEqual([
    { state: 'sent', attempts: 2, last_status: 201, last_error: null },
  ]);
});

it('500 is retried with the backoff, then delivered', async () => {
  const sub = await h.subscribe(push, 'fay', [{ status: 500 }]);
  const event = notificationCreated({ userId: 'fay', type: 'reply' });
  await h.publishAndWait(event);
  await eventually('sent', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'sent');
  expect(push.for(sub).map((r) => r.answered)).toEqual([500, 201]);
});

it('413 fails permanently, with the reason, and is not retried', async () => {
  const sub = await h.subscribe(push, 'gus', [{ status: 413 }]);
  const event = notificationCreated({ userId: 'gus' });
  await h.publishAndWait(event);
  await eventually('failed', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'failed');
  expect(await ledger(event.data.idempotencyKey)).toEqual([
    {
      state: 'failed',
      attempts: 1,
      last_status: 413,
      last_error: expect.stringMatching(/^payload_too_large: the push service answered 413/),
    },
  ]);
  // Nothing is due: a poll claims nothing, and the push service saw one request.
  expect(await h.svc.poller.poll()).toBe(0);
  expect(push.for(sub)).toHaveLength(1);
  // The subscription stays (413 says nothing about it).
  expect(
    (await h.svc.pool.query(`SELECT 1 FROM push_subscriptions WHERE endpoint = $1`, [sub.endpoint])).rowCount,
  ).toBe(1);
});

it('a security alert is pushed with Urgency high even with the push preference off', async () => {
  const sub = await h.subscribe(push, 'hal');
  const alert = notificationCreated({
    userId: 'hal',
    type: 'security_alert',
    push: false,
    excerpt: 'new_login: Firefox on Linux',
  });
  const muted = notificationCreated({ userId: 'hal', type: 'mention', push: false });
  await h.publishAndWait(muted, alert);
  await eventually('sent', async () => (await ledger(alert.data.idempotencyKey))[0]?.state === 'sent');
  const got = push.for(sub);
  expect(got).toHaveLength(1);
  expect(got[0].headers).toMatchObject({ urgency: 'high', ttl: '259200' });
  expect(JSON.parse(got[0].plaintext)).toMatchObject({
    title: 'Security alert on your account',
    body: 'new_login: Firefox on Linux',
    type: 'security_alert',
  });
  // The mention with push off made no row at all.
  expect(await ledger(muted.data.idempotencyKey)).toEqual([]);
});

it('without a push field: a type pushes by its default (mention yes, follow no)', async () => {
  const sub = await h.subscribe(push, 'ivy');
  const mention = notificationCreated({ userId: 'ivy', type: 'mention' });
  const follow = notificationCreated({ userId: 'ivy', type: 'follow', emailChannel: 'digest' });
  delete (mention.data as { push?: boolean }).push;
  await h.publishAndWait(follow, mention);
  await eventually('sent', async () => (await ledger(mention.data.idempotencyKey))[0]?.state === 'sent');
  expect(await ledger(follow.data.idempotencyKey)).toEqual([]);
  expect(push.for(sub)).toHaveLength(1);
});

it('withdrawn before it was sent: no push, whichever arrives first', async () => {
  const sub = await h.subscribe(push, 'jo');
  // Withdrawn first, then created: the row is created cancelled.
  const first = notificationCreated({ userId: 'jo' });
  await h.publishAndWait(withdrawn(first));
  await h.publishAndWait(first);
  expect(await ledger(first.data.idempotencyKey)).toEqual([
    { state: 'cancelled', attempts: 0, last_status: null, last_error: 'withdrawn' },
  ]);
  // Created, held back by the push service (429 for an hour), then withdrawn: never sent.
  const slow = push.subscribe([{ status: 429, headers: { 'retry-after': '3600' } }]);
  await h.svc.app.inject({
    method: 'POST',
    url: '/v1/users/kai/push-subscriptions',
    headers: bearer(h.token('kai')),
    payload: slow.json,
  });
  const second = notificationCreated({ userId: 'kai' });
  await h.publishAndWait(second);
  await eventually('waiting', async () => (await ledger(second.data.idempotencyKey))[0]?.state === 'pending');
  await h.publishAndWait(withdrawn(second));
  expect(await ledger(second.data.idempotencyKey)).toEqual([
    { state: 'cancelled', attempts: 1, last_status: 429, last_error: 'withdrawn' },
  ]);
  expect(push.for(sub)).toHaveLength(0);
  expect(push.for(slow).map((r) => r.answered)).toEqual([429]);
});

it("user.erased deletes the user's subscriptions and the payloads of their pushes", async () => {
  const sub = await h.subscribe(push, 'lee');
  const event = notificationCreated({ userId: 'lee' });
  await h.publishAndWait(event);
  await eventually('sent', async () => (await ledger(event.data.idempotencyKey))[0]?.state === 'sent');
  const erased = buildEvent('user.erased', { userId: 'lee', erasureId: '42' }, { producer: 'reconciler' });
  await h.publishAndWait(erased, erased);
  const subs = await h.svc.pool.query(`SELECT 1 FROM push_subscriptions WHERE user_id = 'lee'`);
  expect(subs.rows).toEqual([]);
  const rows = await h.svc.pool.query(`SELECT state::text, payload FROM push_deliveries WHERE user_id = 'lee'`);
  expect(rows.rows).toEqual([{ state: 'sent', payload: null }]);
  const claims = await h.svc.pool.query(`SELECT consumer FROM processed_events WHERE event_id = $1`, [erased.id]);
  expect(claims.rows).toEqual([{ consumer: 'push-service.send' }]);
  expect(push.for(sub)).toHaveLength(1);
});
