import { buildEvent, type EventOf } from '@community/contracts';
import { eventually } from '@community/testing';
import { topicFor } from '../src/domain/delivery';
import { notificationCreated, startHarness, withdrawn, type Harness } from './support/harness';
import { TestPushServer, type ReceivedPush, type TestSubscription } from './support/push-server';

// Grouped pushes (docs/PUSH.md "Grouped pushes"): a group member's push counts the group so far
// from push-service's ledger, against the real broker and Postgres and a push service of the
// test's own that decrypts every payload.
let h: Harness;
let push: TestPushServer;

beforeAll(async () => {
  push = await new TestPushServer().start();
  h = await startHarness('grouped');
}, 60_000);

afterAll(async () => {
  await h?.close();
  await push?.close();
});

type Created = EventOf<'notification.created'>;

/** Publishes one member and waits until its push reached every browser of the user. */
async function pushed(event: Created): Promise<void> {
  await h.publishAndWait(event);
  await eventually(`${event.data.idempotencyKey} sent`, async () => {
    const { rows } = await h.svc.pool.query<{ state: string }>(
      'SELECT state::text FROM push_deliveries WHERE idempotency_key = $1',
      [event.data.idempotencyKey],
    );
    return rows.length > 0 && rows.every((r) => r.state === 'sent');
  });
}

const payload = (r: ReceivedPush | undefined) => JSON.parse(r?.plaintext ?? 'null') as Record<string, unknown>;
const pushOf = (sub: TestSubscription, e: Created) =>
  push.for(sub).find((r) => payload(r).notificationId === e.data.notificationId);

const reaction = (userId: string, groupKey: string, actorId: string, excerpt = '👍') =>
  notificationCreated({ userId, type: 'reaction', resourceType: 'post', push: true, groupKey, actorId, excerpt });

it("three reactions on one post from three actors: the third push says 3 people, under the first one's tag and Topic", async () => {
  const sub = await h.subscribe(push, 'ana');
  const groupKey = 'reaction:post:p-1:20791';
  const members = [
    reaction('ana', groupKey, 'bob', '👍'),
    reaction('ana', groupKey, 'cy', '🎉'),
    reaction('ana', groupKey, 'dee', '❤️'),
  ];
  for (const m of members) await pushed(m);

  expect(push.for(sub)).toHaveLength(3);
  const [first, second, third] = members.map((m) => pushOf(sub, m));
  expect(payload(first)).toMatchObject({ title: 'Someone reacted to your post', body: '👍' });
  expect(payload(second)).toMatchObject({ title: '2 people reacted to your post', body: '🎉' });
  expect(payload(third)).toMatchObject({
    title: '3 people reacted to your post',
    body: '❤️',
    notificationId: members[2].data.notificationId,
    tag: topicFor(groupKey),
  });
  expect(payload(third).tag).toBe(payload(first).tag);
  expect(third?.headers.topic).toBe(first?.headers.topic);
  expect(third?.headers.topic).toBe(topicFor(groupKey));
});

it('a redelivered member pushes nothing more and is not counted twice', async () => {
  const sub = await h.subscribe(push, 'bea');
  const groupKey = 'reaction:post:p-2:20791';
  const [one, two, three] = [
    reaction('bea', groupKey, 'bob'),
    reaction('bea', groupKey, 'cy'),
    reaction('bea', groupKey, 'dee'),
  ];
  await pushed(one);
  await pushed(two);
  expect(payload(pushOf(sub, two)).title).toBe('2 people reacted to your post');

  // The same member again: the broker's redelivery (same event) and a producer's retry (new event id).
  await h.publishAndWait(two, buildEvent('notification.created', two.data, { producer: 'notification-service' }));
  expect(push.for(sub)).toHaveLength(2);

  await pushed(three);
  expect(push.for(sub)).toHaveLength(3);
  expect(payload(pushOf(sub, three)).title).toBe('3 people reacted to your post');
});

it('a withdrawn member is not counted in the next push', async () => {
  const sub = await h.subscribe(push, 'cai');
  const groupKey = 'reaction:post:p-3:20791';
  const [one, two, three] = [
    reaction('cai', groupKey, 'bob'),
    reaction('cai', groupKey, 'cy'),
    reaction('cai', groupKey, 'dee'),
  ];
  await pushed(one);
  await pushed(two);
  expect(payload(pushOf(sub, two)).title).toBe('2 people reacted to your post');

  // cy took the reaction back: its push was shown already, but the group is one fewer.
  await h.publishAndWait(withdrawn(two));
  await pushed(three);
  expect(push.for(sub)).toHaveLength(3);
  expect(payload(pushOf(sub, three)).title).toBe('2 people reacted to your post');
});

it("replies counted by notification, not by the user's browsers; follows by people", async () => {
  const [phone, laptop] = [await h.subscribe(push, 'dan'), await h.subscribe(push, 'dan')];
  const replies = 'reply:c-9:20791';
  const reply = (actorId: string) =>
    notificationCreated({ userId: 'dan', type: 'reply', groupKey: replies, actorId, excerpt: 'Agreed.' });
  const [r1, r2] = [reply('bob'), reply('bob')];
  await pushed(r1);
  await pushed(r2);
  for (const sub of [phone, laptop]) {
    expect(payload(pushOf(sub, r1)).title).toBe('Someone replied to your comment');
    expect(payload(pushOf(sub, r2)).title).toBe('2 new replies to your comment');
  }

  const follows = 'follow:20791';
  const follow = (actorId: string) =>
    notificationCreated({
      userId: 'dan',
      type: 'follow',
      resourceType: 'user',
      push: true,
      groupKey: follows,
      actorId,
    });
  const [f1, f2] = [follow('eve'), follow('fay')];
  await pushed(f1);
  await pushed(f2);
  expect(payload(pushOf(phone, f2))).toMatchObject({ title: '2 people followed you', tag: topicFor(follows) });
});

it('a mention never groups, even carrying a groupKey', async () => {
  const sub = await h.subscribe(push, 'eli');
  const groupKey = 'mention:bogus:20791';
  const mentions = [
    notificationCreated({ userId: 'eli', type: 'mention', groupKey, actorId: 'bob' }),
    notificationCreated({ userId: 'eli', type: 'mention', groupKey, actorId: 'cy' }),
  ];
  for (const m of mentions) await pushed(m);

  expect(push.for(sub)).toHaveLength(2);
  for (const m of mentions) {
    const got = pushOf(sub, m);
    expect(payload(got)).toMatchObject({
      title: 'Someone mentioned you in a comment',
      tag: topicFor(m.data.idempotencyKey),
    });
    expect(got?.headers.topic).toBe(topicFor(m.data.idempotencyKey));
  }
  const { rows } = await h.svc.pool.query(
    `SELECT 1 FROM push_deliveries WHERE user_id = 'eli' AND group_key IS NOT NULL`,
  );
  expect(rows).toEqual([]);
});

it("an erased actor is cleared from the others' ledger rows: the next push no longer counts them among the people", async () => {
  const sub = await h.subscribe(push, 'fin');
  const groupKey = 'reaction:post:p-4:20791';
  const [one, two] = [reaction('fin', groupKey, 'gus'), reaction('fin', groupKey, 'hal')];
  await pushed(one);
  await pushed(two);
  expect(payload(pushOf(sub, two)).title).toBe('2 people reacted to your post');

  await h.publishAndWait(buildEvent('user.erased', { userId: 'gus', erasureId: '7' }, { producer: 'reconciler' }));
  const { rows } = await h.svc.pool.query(`SELECT 1 FROM push_deliveries WHERE actor_id = 'gus'`);
  expect(rows).toEqual([]);
  // gus's reaction stays a member until notification-service withdraws it (the actor's deletion
  // retracts it); meanwhile it counts as a reaction, not as one of the people.
  const three = reaction('fin', groupKey, 'ivo');
  await pushed(three);
  expect(payload(pushOf(sub, three)).title).toBe('2 people reacted to your post');
  await h.publishAndWait(withdrawn(one));
  const four = reaction('fin', groupKey, 'jan');
  await pushed(four);
  expect(payload(pushOf(sub, four)).title).toBe('3 people reacted to your post');
});
