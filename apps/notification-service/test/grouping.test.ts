import { randomUUID } from 'node:crypto';
import type { AnyEvent } from '@community/contracts';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { batchItems, bearer, countersAndRecount, event, mention, startHarness, type Harness } from './harness';

/**
 * Grouping (docs/NOTIFICATIONS.md "Grouping"): reactions on one post, follows of a user, replies to
 * one comment and comments on one post collapse into one inbox item with a count and the latest
 * actors; mentions and security alerts never group; the unread count counts items; a new member
 * after a read makes the item unread again; and the same set of events gives the same item in any
 * arrival order, batching and redelivery (a seeded permutation property test).
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('grouping', { amqp: false });
});
afterAll(async () => h.close());

type Item = {
  id: string;
  type: string;
  actorId: string | null;
  resourceId: string;
  readAt: string | null;
  group: { key: string; count: number; actorCount: number; actors: Array<{ id: string }> } | null;
};

async function inbox(userId: string): Promise<Item[]> {
  const res = await h.app.inject({ url: `/v1/users/${userId}/notifications`, headers: bearer(h.token(userId)) });
  expect(res.statusCode).toBe(200);
  return res.json().items;
}
async function unread(userId: string): Promise<number> {
  const res = await h.app.inject({
    url: `/v1/users/${userId}/notifications/unread-count`,
    headers: bearer(h.token(userId)),
  });
  return res.json().count;
}

/** Runs events through the consumers' batch handler, as the runtime would, in the given batches. */
async function ingest(consumer: string, batches: AnyEvent[][]): Promise<void> {
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer,
    metrics: h.metrics,
    batchTimeoutMs: 10_000,
  });
  for (const batch of batches) {
    const results = await handle(batchItems(batch), { signal: new AbortController().signal } as never);
    for (const r of results ?? []) if (r instanceof Error) throw r;
  }
}

const uid = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;
const minute = (m: number) => new Date(Date.UTC(2026, 11, 3, 10, m)).toISOString();

function reaction(owner: string, postId: string, actor: string, at: string) {
  return {
    ...event('reaction.added', {
      reactionId: uid('r'),
      actorId: actor,
      targetType: 'post',
      targetId: postId,
      targetAuthorId: owner,
      emoji: '👍',
    }),
    occurredAt: at,
  };
}

it('reactions on one post are one item with the count and the latest three distinct actors, newest first', async () => {
  const owner = uid('owner');
  const actors = ['ana', 'budi', 'citra', 'dewi', 'eko'].map(uid);
  await ingest('grouping-a', [
    actors.map((a, i) => reaction(owner, 'post-1', a, minute(i))),
    [reaction(owner, 'post-1', actors[4], minute(9))], // eko again, later: still one actor
    [reaction(owner, 'post-2', actors[0], minute(1))], // another post: another item
  ]);
  const items = await inbox(owner);
  expect(items).toHaveLength(2);
  const post1 = items.find((i) => i.resourceId === 'post-1');
  expect(post1?.group).toMatchObject({ count: 6, actorCount: 5 });
  expect(post1?.group?.actors.map((a) => a.id)).toEqual([actors[4], actors[3], actors[2]]);
  expect(post1?.actorId).toBe(actors[4]);
  expect(await unread(owner)).toBe(2);
});

it('mentions and security alerts never group; follows of a user do', async () => {
  const user = uid('user');
  const [a, b] = [uid('a'), uid('b')];
  await ingest('grouping-b', [
    [mention(uid('c'), a, user), mention(uid('c'), b, user)],
    [
      event('security.alert', { alertId: uid('al'), userId: user, kind: 'new_login', detail: 'x' }),
      event('security.alert', { alertId: uid('al'), userId: user, kind: 'new_login', detail: 'y' }),
    ],
  ]);
  await ingest('grouping-b', [
    [
      event('user.followed', { followerId: a, followeeId: user }),
      event('user.followed', { followerId: b, followeeId: user }),
    ],
  ]);
  const items = await inbox(user);
  expect(items.map((i) => [i.type, i.group?.count ?? null]).sort()).toEqual(
    [
      ['follow', 2],
      ['mention', null],
      ['mention', null],
      ['security_alert', null],
      ['security_alert', null],
    ].sort(),
  );
  expect(await unread(user)).toBe(5);
});

it('reading an item reads the group; a member arriving after the read makes it unread again, on top', async () => {
  const owner = uid('owner');
  const [a, b, c] = [uid('a'), uid('b'), uid('c')];
  await ingest('grouping-c', [[reaction(owner, 'p', a, minute(1)), reaction(owner, 'p', b, minute(2))]]);
  await ingest('grouping-c', [[mention(uid('c'), c, owner)]]);
  const [first] = (await inbox(owner)).filter((i) => i.group);
  const read = await h.app.inject({
    method: 'POST',
    url: `/v1/users/${owner}/notifications/${first.id}/read`,
    headers: bearer(h.token(owner)),
  });
  expect(read.statusCode).toBe(200);
  expect(read.json()).toMatchObject({ count: 1, notification: { readAt: expect.any(String) } });
  expect(await unread(owner)).toBe(1);

  await ingest('grouping-c', [[reaction(owner, 'p', c, minute(3))]]);
  const items = await inbox(owner);
  expect(items[0]).toMatchObject({ readAt: null, group: { count: 3 } });
  expect(await unread(owner)).toBe(2);
  for (const row of await countersAndRecount(h.pool)) expect(row.counter).toBe(row.recount);
});

/** A seeded PRNG (mulberry32), so a failing order can be reproduced from the printed seed. */
function prng(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

it('the same set of events gives the same items in any order, batching and redelivery (20 permutations)', async () => {
  const base = uid('perm');
  const actors = Array.from({ length: 6 }, (_, i) => `${base}-actor-${i}`);
  // The fixed set: reactions on two posts, follows, replies to one comment, comments on a post,
  // a mention that outranks one of the replies (same comment, same recipient), and a deletion.
  const facts = (owner: string): AnyEvent[] => {
    const replyComment = `${owner}-reply-0`;
    const list: AnyEvent[] = [];
    actors.forEach((a, i) => {
      list.push(
        {
          ...event('reaction.added', {
            reactionId: `${owner}-r${i}`,
            actorId: a,
            targetType: 'post',
            targetId: 'p1',
            targetAuthorId: owner,
            emoji: '🎉',
          }),
          occurredAt: minute(i),
        },
        {
          ...event('reaction.added', {
            reactionId: `${owner}-s${i}`,
            actorId: a,
            targetType: 'post',
            targetId: 'p2',
            targetAuthorId: owner,
            emoji: '🎉',
          }),
          occurredAt: minute(10 - i),
        },
        { ...event('user.followed', { followerId: a, followeeId: owner }), occurredAt: minute(20 + i) },
        {
          ...event('comment.created', {
            commentId: `${owner}-reply-${i}`,
            postId: 'p9',
            postAuthorId: 'someone-else',
            authorId: a,
            parentCommentId: 'c-parent',
            parentAuthorId: owner,
            excerpt: `reply ${i}`,
          }),
          occurredAt: minute(30 + i),
        },
        {
          ...event('comment.created', {
            commentId: `${owner}-cm-${i}`,
            postId: 'p3',
            postAuthorId: owner,
            authorId: a,
            excerpt: `c ${i}`,
          }),
          occurredAt: minute(40 + i),
        },
      );
    });
    list.push({ ...mention(replyComment, actors[0], owner), occurredAt: minute(50) });
    return list;
  };
  const snapshot = async (owner: string) =>
    (await inbox(owner))
      .map((i) => ({
        type: i.type,
        actorId: i.actorId,
        resourceId: i.resourceId,
        group: i.group && {
          count: i.group.count,
          actorCount: i.group.actorCount,
          actors: i.group.actors.map((a) => a.id),
        },
      }))
      .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));

  const reference = `${base}-ref`;
  await ingest(`${reference}-q`, [facts(reference)]);
  const expected = await snapshot(reference);
  expect(
    expected
      .filter((i) => i.group)
      .map((i) => i.group?.count)
      .sort(),
  ).toEqual([5, 6, 6, 6, 6]); // the mention took one reply

  for (let seed = 1; seed <= 20; seed++) {
    const owner = `${base}-o${seed}`;
    const random = prng(seed);
    const events = facts(owner);
    // Some events delivered twice (a redelivery: the same id).
    const delivered = [...events, ...events.filter(() => random() < 0.2)];
    for (let i = delivered.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [delivered[i], delivered[j]] = [delivered[j], delivered[i]];
    }
    const batches: AnyEvent[][] = [];
    for (let i = 0; i < delivered.length;) {
      const size = 1 + Math.floor(random() * 8);
      batches.push(delivered.slice(i, i + size));
      i += size;
    }
    // One inbox consumer for every batch: what differs between runs is only order, batching and copies.
    await ingest(`${owner}-q`, batches);
    const got = await snapshot(owner);
    // Actor ids and resource ids carry the owner's name: compare with the reference's, renamed.
    expect({ seed, items: JSON.parse(JSON.stringify(got).split(owner).join(reference)) }).toEqual({
      seed,
      items: expected,
    });
    expect(await unread(owner)).toBe(expected.length);
  }
  for (const row of await countersAndRecount(h.pool)) expect(row.counter).toBe(row.recount);
});
