import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import { DEAD_LETTER_HEADERS } from '@community/messaging';
import { event, eventually, seedFollowers, startHarness, type Harness } from './harness';

/**
 * The follow graph by occurredAt (not arrival), the backfill lane (follow copies the followee's
 * posts, unfollow removes them), and bad input going to the DLQ with a reason.
 */
let h: Harness;
const base = Date.now() - 3_600_000;
const at = (s: number) => new Date(base + s * 1000);

beforeAll(async () => {
  h = await startHarness('follows', { env: { FEED_BACKFILL_COUNT: '3' } });
}, 60_000);
afterAll(async () => h?.close());

const edge = async (follower: string, followee: string) =>
  (
    await h.pool.query('SELECT active, occurred_at FROM feed_follows WHERE follower_id = $1 AND followee_id = $2', [
      follower,
      followee,
    ])
  ).rows[0];
const followers = async (author: string) =>
  (await h.pool.query('SELECT follower_count FROM feed_authors WHERE author_id = $1', [author])).rows[0]
    ?.follower_count ?? 0;
const settled = async () =>
  eventually(
    'activity and backfill queues drained',
    async () => {
      const [a, b] = await Promise.all([
        h.vhost!.depth('feed-service.activity'),
        h.vhost!.depth('feed-service.backfill'),
      ]);
      return a.total === 0 && b.total === 0;
    },
    15_000,
    100,
  );

describe('order safety', () => {
  it('ends unfollowed when the unfollow arrives before its follow, and a replayed follow changes nothing', async () => {
    const [a, b] = [`a-${randomUUID()}`, `b-${randomUUID()}`];
    const follow = event('user.followed', { followerId: a, followeeId: b }, at(1));
    await h.publish(event('user.unfollowed', { followerId: a, followeeId: b }, at(2)));
    await eventually('unfollow recorded', async () => (await edge(a, b))?.active === false);
    await h.publish(follow);
    await h.publish(follow);
    await settled();
    expect(await edge(a, b)).toEqual({ active: false, occurred_at: at(2) });
    expect(await followers(b)).toBe(0);

    await h.publish(event('user.followed', { followerId: a, followeeId: b }, at(3)));
    await eventually('re-follow recorded', async () => (await edge(a, b))?.active === true);
    expect(await followers(b)).toBe(1);
    // The older unfollow, delivered again, does not undo the newer follow.
    await h.publish(event('user.unfollowed', { followerId: a, followeeId: b }, at(2)));
    await settled();
    expect(await edge(a, b)).toEqual({ active: true, occurred_at: at(3) });
    expect(await followers(b)).toBe(1);
  });
});

describe('backfill lane', () => {
  it("copies the followee's latest posts on follow and removes them on unfollow", async () => {
    const author = `au-${randomUUID().slice(0, 8)}`;
    const other = `ot-${randomUUID().slice(0, 8)}`;
    const [reader] = await seedFollowers(h, other, 1, { prefix: `rd-${author}` });
    await h.publish(
      event('post.published', { postId: `o-1-${other}`, authorId: other, title: 'other', excerpt: '' }, at(10)),
    );
    for (let i = 1; i <= 5; i++)
      await h.publish(
        event(
          'post.published',
          { postId: `p-${i}-${author}`, authorId: author, title: `p${i}`, excerpt: '' },
          at(10 + i),
        ),
      );
    await settled();
    expect((await h.feed(reader)).body.items.map((i) => i.postId)).toEqual([`o-1-${other}`]);

    await h.publish(event('user.followed', { followerId: reader, followeeId: author }, at(20)));
    await eventually('backfilled into the materialised feed', async () => (await h.redis.zcard(`f:${reader}`)) === 4);
    // FEED_BACKFILL_COUNT=3: the three latest of the author's posts, beside what was there.
    expect((await h.redis.zrange(`f:${reader}`, 0, -1)).sort()).toEqual(
      [`o-1-${other}`, `p-3-${author}`, `p-4-${author}`, `p-5-${author}`].sort(),
    );
    expect((await h.feed(reader, { limit: 2 })).source).toBe('hit');

    await h.publish(event('user.unfollowed', { followerId: reader, followeeId: author }, at(21)));
    await eventually('removed', async () => (await h.redis.zcard(`f:${reader}`)) === 1);
    expect((await h.feed(reader)).body.items.map((i) => i.postId)).toEqual([`o-1-${other}`]);
    const backfills = (await h.service.metrics.backfills.get()).values.map((v) => [v.labels.action, v.value]);
    expect(backfills).toEqual(
      expect.arrayContaining([
        ['backfilled', 1],
        ['removed', 1],
      ]),
    );
  });
});

describe('bad input', () => {
  async function publishRaw(exchange: string, routingKey: string, body: string) {
    const conn = await amqplib.connect(h.vhost!.url);
    try {
      const ch = await conn.createConfirmChannel();
      ch.publish(exchange, routingKey, Buffer.from(body), {
        persistent: true,
        contentType: 'application/json',
        messageId: randomUUID(),
        type: routingKey,
      });
      await ch.waitForConfirms();
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  it.each([
    [
      'a post.published without data',
      'community.events',
      'post.published',
      JSON.stringify({
        id: randomUUID(),
        type: 'post.published',
        version: 1,
        occurredAt: new Date().toISOString(),
        producer: 'x',
        correlationId: 'c',
      }),
      'feed-service.activity.dlq',
    ],
    ['a chunk message that is not JSON', '', 'feed-service.fanout', '{"id":', 'feed-service.fanout.dlq'],
    [
      'a reconcile message without a followee',
      '',
      'feed-service.backfill',
      JSON.stringify({
        id: 'x',
        type: 'feed.follow-reconcile',
        version: 1,
        occurredAt: new Date().toISOString(),
        producer: 'x',
        correlationId: 'c',
        data: { followerId: 'a' },
      }),
      'feed-service.backfill.dlq',
    ],
  ])('dead-letters %s with a reason and keeps serving', async (_what, exchange, routingKey, body, dlq) => {
    await publishRaw(exchange, routingKey, body);
    const [dead] = await eventually(`message in ${dlq}`, async () => {
      const got = await h.vhost!.take(dlq, 1);
      return got.length > 0 ? got : undefined;
    });
    const headers = dead.properties.headers ?? {};
    expect(headers[DEAD_LETTER_HEADERS.errorKind]).toBe('permanent');
    expect(String(headers[DEAD_LETTER_HEADERS.errorMessage])).toMatch(/data|JSON|followee/i);
    expect((await h.feed('anyone')).status).toBe(200);
  });
});
