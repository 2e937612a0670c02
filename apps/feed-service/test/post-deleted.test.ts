import { randomUUID } from 'node:crypto';
import { event, eventually, feedsHolding, seedFollowers, startHarness, type Harness } from './harness';

/**
 * post.deleted (docs/FEED.md "Deleted posts") against the real broker, Postgres and Redis: the post
 * leaves every follower's feed (the HTTP answer and the Redis sorted sets), and a post.published
 * that arrives after its deletion is never fanned out.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('post-deleted');
}, 60_000);
afterAll(async () => h?.close());

const uid = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;
const published = (postId: string, authorId: string) =>
  event('post.published', { postId, authorId, title: `Title of ${postId}`, excerpt: 'excerpt' });

async function feedIds(userId: string): Promise<string[]> {
  const res = await h.feed(userId);
  expect(res.status).toBe(200);
  return res.body.items.map((i) => i.postId);
}

it('a deleted post leaves every follower feed; the author’s other posts stay', async () => {
  const author = uid('author');
  const followers = await seedFollowers(h, author, 5);
  const [gone, kept] = [uid('post'), uid('post')];
  await h.publish(published(gone, author));
  await h.publish(published(kept, author));
  await eventually('both posts fanned out', async () => (await feedsHolding(h.redis, followers, kept)) === 5, 20_000);
  await eventually('both posts fanned out', async () => (await feedsHolding(h.redis, followers, gone)) === 5, 20_000);
  expect((await feedIds(followers[0])).sort()).toEqual([gone, kept].sort());

  await h.publish(event('post.deleted', { postId: gone, authorId: author }));

  await eventually(
    'the post left every feed',
    async () => (await feedsHolding(h.redis, followers, gone)) === 0,
    20_000,
  );
  for (const f of followers) expect(await feedIds(f)).toEqual([kept]);
  expect(await h.redis.exists(`p:${gone}`)).toBe(0);
});

it('a post.published that arrives after its post.deleted is never fanned out', async () => {
  const author = uid('author');
  const followers = await seedFollowers(h, author, 3);
  const [late, marker] = [uid('post'), uid('post')];
  await h.publish(event('post.deleted', { postId: late, authorId: author }));
  await eventually('the tombstone', async () => {
    const { rows } = await h.pool.query(`SELECT 1 FROM feed_post_deletions WHERE post_id = $1`, [late]);
    return rows.length === 1;
  });
  await h.publish(published(late, author));
  // A later post of the same author, on the same queue: once it is fanned out, the late one was handled.
  await h.publish(published(marker, author));
  await eventually(
    'the next post fanned out',
    async () => (await feedsHolding(h.redis, followers, marker)) === 3,
    20_000,
  );
  expect(await feedsHolding(h.redis, followers, late)).toBe(0);
  expect(await feedIds(followers[0])).toEqual([marker]);
  const { rows } = await h.pool.query(`SELECT 1 FROM feed_posts WHERE post_id = $1`, [late]);
  expect(rows).toEqual([]);
});
