import { randomUUID } from 'node:crypto';
import { DAY_MS, event, eventually, feedsHolding, seedFollowers, startHarness, type Harness } from './harness';

/**
 * Fan-out on write against the real broker, Postgres and Redis: exactly one entry per follower,
 * duplicates that add nothing, the small lane, the large-author merge, an inactive user's first
 * read and a first page that is never stale.
 */
let h: Harness;
const base = Date.now() - 3_600_000;
const at = (s: number) => new Date(base + s * 1000);

beforeAll(async () => {
  h = await startHarness('fanout', { env: { FEED_FANOUT_CHUNK_SIZE: '1000', FEED_LARGE_AUTHOR_THRESHOLD: '20000' } });
}, 60_000);
afterAll(async () => h?.close());

async function jobDone(postId: string) {
  return eventually(
    `fan-out of ${postId} done`,
    async () => {
      const { rows } = await h.pool.query(
        'SELECT chunks_total, chunks_done, done_at FROM feed_fanout_jobs WHERE post_id = $1',
        [postId],
      );
      return rows[0]?.done_at ? rows[0] : undefined;
    },
    60_000,
    50,
  );
}

async function chunkStats(postId: string) {
  const { rows } = await h.pool.query<{ chunks: string; attempts: string; written: string; undone: string }>(
    `SELECT count(*) AS chunks, sum(attempts) AS attempts, sum(written) AS written, count(*) FILTER (WHERE done_at IS NULL) AS undone FROM feed_fanout_chunks WHERE post_id = $1`,
    [postId],
  );
  return {
    chunks: Number(rows[0].chunks),
    attempts: Number(rows[0].attempts),
    written: Number(rows[0].written),
    undone: Number(rows[0].undone),
  };
}

async function feedSizes(users: string[]): Promise<Map<number, number>> {
  const sizes = new Map<number, number>();
  for (let i = 0; i < users.length; i += 5000) {
    const pipe = h.redis.pipeline();
    for (const u of users.slice(i, i + 5000)) pipe.zcard(`f:${u}`);
    for (const [, v] of (await pipe.exec()) ?? []) sizes.set(Number(v), (sizes.get(Number(v)) ?? 0) + 1);
  }
  return sizes;
}

describe('a post of an author with 10,000 active followers', () => {
  const author = `big-${randomUUID().slice(0, 8)}`;
  const postId = `post-${randomUUID()}`;
  let followers: string[];
  const published = event(
    'post.published',
    { postId, authorId: author, title: 'Ten thousand', excerpt: 'to everyone' },
    at(10),
  );

  beforeAll(async () => {
    followers = await seedFollowers(h, author, 10_000);
  });

  it('reaches every follower exactly once, in 10 checkpointed chunks', async () => {
    await h.publish(published);
    await jobDone(postId);
    expect(await feedsHolding(h.redis, followers, postId)).toBe(10_000);
    expect(await feedSizes(followers)).toEqual(new Map([[1, 10_000]]));
    expect(await chunkStats(postId)).toEqual({ chunks: 10, attempts: 10, written: 10_000, undone: 0 });
    const lag = (await h.service.metrics.fanoutLag.get()).values.find(
      (v) => v.metricName === 'feed_fanout_lag_seconds_count',
    );
    expect(lag?.value).toBe(1);
  });

  it('adds nothing for a duplicate post.published (the same event again, and another event for the same post)', async () => {
    const doneBefore = (await h.service.metrics.chunks.get()).values.find((v) => v.labels.outcome === 'done')?.value;
    await h.publish(published);
    await h.publish(
      event('post.published', { postId, authorId: author, title: 'Ten thousand (again)', excerpt: 'replayed' }, at(11)),
    );
    await eventually('both duplicates handled', async () => {
      const v = (await h.service.messaging!.metrics.succeeded.get()).values.filter(
        (x) => x.labels.queue === 'feed-service.activity' && x.labels.outcome === 'duplicate',
      );
      return v.reduce((n, x) => n + x.value, 0) >= 2;
    });
    expect(await feedSizes(followers)).toEqual(new Map([[1, 10_000]]));
    expect(await chunkStats(postId)).toEqual({ chunks: 10, attempts: 10, written: 10_000, undone: 0 });
    expect((await h.service.metrics.chunks.get()).values.find((v) => v.labels.outcome === 'done')?.value).toBe(
      doneBefore,
    );
    const { rows } = await h.pool.query('SELECT title FROM feed_posts WHERE post_id = $1', [postId]);
    expect(rows).toEqual([{ title: 'Ten thousand' }]);
  });
});

describe('reads', () => {
  const small = `small-${randomUUID().slice(0, 8)}`;
  const large = `large-${randomUUID().slice(0, 8)}`;
  let reader: string;

  beforeAll(async () => {
    [reader] = await seedFollowers(h, small, 10, { prefix: `r-${small}` });
    // The reader follows a large author too (the follower count is over the threshold).
    await h.pool.query(`INSERT INTO feed_follows VALUES ($1, $2, true, now() - interval '1 day')`, [reader, large]);
    await h.pool.query(`INSERT INTO feed_authors (author_id, follower_count) VALUES ($1, 20001)`, [large]);
  });

  it('merges the large author at read time, ordered and paginated exactly like pushed posts', async () => {
    const expected: string[] = [];
    for (let i = 1; i <= 25; i++) {
      const author = i % 3 === 0 ? large : small;
      const postId = `m-${String(i).padStart(2, '0')}-${author.slice(0, 5)}`;
      expected.unshift(postId);
      await h.publish(
        event('post.published', { postId, authorId: author, title: `post ${i}`, excerpt: `by ${author}` }, at(100 + i)),
      );
    }
    // Two posts in the same millisecond, one of each kind: the tie is broken by post id in both sources.
    await h.publish(
      event('post.published', { postId: 'm-tie-a', authorId: small, title: 'tie a', excerpt: '' }, at(90)),
    );
    await h.publish(
      event('post.published', { postId: 'm-tie-b', authorId: large, title: 'tie b', excerpt: '' }, at(90)),
    );
    expected.push('m-tie-b', 'm-tie-a');
    await eventually('every post recorded and fanned out', async () => {
      const { rows } = await h.pool.query(`SELECT count(*)::int AS n FROM feed_posts WHERE post_id LIKE 'm-%'`);
      const jobs = await h.pool.query(
        `SELECT count(*)::int AS n FROM feed_fanout_jobs WHERE author_id = $1 AND done_at IS NOT NULL`,
        [small],
      );
      return rows[0].n === 27 && jobs.rows[0].n === 18;
    });
    const { rows: pushed } = await h.pool.query(
      `SELECT count(*)::int AS n FROM feed_posts WHERE author_id = $1 AND NOT pushed`,
      [large],
    );
    expect(pushed[0].n).toBe(9);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const res = await h.feed(reader, { limit: 4, cursor });
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((i) => i.postId));
      cursor = res.body.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 20);
    expect(seen).toEqual(expected);
    const first = (await h.feed(reader, { limit: 1 })).body.items[0];
    expect(first).toEqual({
      postId: expected[0],
      authorId: small,
      title: 'post 25',
      excerpt: `by ${small}`,
      publishedAt: at(125).toISOString(),
    });
  });

  it('a redelivered large-author post whose author mark was lost (crash between the two writes) is merged after all', async () => {
    const author = `crashed-${randomUUID().slice(0, 8)}`;
    const [follower] = await seedFollowers(h, author, 1, { prefix: `rc-${author}` });
    await h.pool.query(`UPDATE feed_authors SET follower_count = 20001 WHERE author_id = $1`, [author]);
    const post = event(
      'post.published',
      { postId: `x-${author}`, authorId: author, title: 'lost mark', excerpt: '' },
      at(700),
    );
    await h.publish(post);
    await eventually(
      'recorded unpushed',
      async () =>
        (await h.pool.query(`SELECT 1 FROM feed_posts WHERE post_id = $1 AND NOT pushed`, [`x-${author}`])).rowCount ===
        1,
    );
    await eventually(
      'author marked',
      async () =>
        (await h.pool.query(`SELECT 1 FROM feed_authors WHERE author_id = $1 AND has_unpushed`, [author])).rowCount ===
        1,
    );
    // The state a crash after the first INSERT leaves: the post row, no mark on its author.
    await h.pool.query(`UPDATE feed_authors SET has_unpushed = false WHERE author_id = $1`, [author]);
    expect((await h.feed(follower, { limit: 5 })).body.items.map((i) => i.postId)).not.toContain(`x-${author}`);
    await h.publish(post); // the broker's redelivery of the unacked message
    await eventually('merged at read time', async () =>
      (await h.feed(follower, { limit: 5 })).body.items.some((i) => i.postId === `x-${author}`),
    );
  });

  it('never serves a stale first page after new posts land, and a cursor taken before them stays valid', async () => {
    const before = await h.feed(reader, { limit: 3 });
    expect(before.source).toBe('hit');
    const next = await h.feed(reader, { limit: 3, cursor: before.body.nextCursor! });
    await h.publish(
      event('post.published', { postId: 'n-new-small', authorId: small, title: 'new', excerpt: '' }, at(500)),
    );
    await h.publish(
      event('post.published', { postId: 'n-new-large', authorId: large, title: 'new large', excerpt: '' }, at(501)),
    );
    const after = await eventually(
      'the new posts on the first page',
      async () => {
        const res = await h.feed(reader, { limit: 3 });
        return res.body.items[0]?.postId === 'n-new-large' && res.body.items[1]?.postId === 'n-new-small'
          ? res
          : undefined;
      },
      10_000,
      20,
    );
    expect(after.body.items[2].postId).toBe(before.body.items[0].postId);
    expect((await h.feed(reader, { limit: 3, cursor: before.body.nextCursor! })).body).toEqual(next.body);
  });

  it('writes an inactive follower nothing, and answers their first read completely from the projections', async () => {
    const author = `s2-${randomUUID().slice(0, 8)}`;
    const [inactive, twin] = await seedFollowers(h, author, 2, {
      lastActiveAt: new Date(Date.now() - 30 * DAY_MS),
      materialised: false,
    });
    for (let i = 1; i <= 5; i++)
      await h.publish(
        event(
          'post.published',
          { postId: `i-${i}-${author}`, authorId: author, title: `t${i}`, excerpt: '' },
          at(600 + i),
        ),
      );
    await eventually('fan-outs done', async () => {
      const { rows } = await h.pool.query(
        `SELECT count(*)::int AS n FROM feed_fanout_jobs WHERE author_id = $1 AND done_at IS NOT NULL`,
        [author],
      );
      return rows[0].n === 5;
    });
    expect(await h.redis.exists(`f:${inactive}`, `f:${twin}`)).toBe(0);
    const regenerations = async () => (await h.service.metrics.regenerations.get()).values[0]?.value ?? 0;
    const before = await regenerations();

    const first = await h.feed(inactive, { limit: 10 });
    expect(first.source).toBe('miss');
    expect(first.body.items.map((i) => i.postId)).toEqual([5, 4, 3, 2, 1].map((i) => `i-${i}-${author}`));
    const second = await h.feed(inactive, { limit: 10 });
    expect(second.source).toBe('hit');
    expect(second.body).toEqual(first.body);

    // Concurrent first reads of one cold feed collapse into one rebuild, and all answer in full.
    const answers = await Promise.all([1, 2, 3, 4].map(() => h.feed(twin, { limit: 10 })));
    for (const a of answers) expect(a.body).toEqual(first.body);
    expect(await regenerations()).toBe(before + 2);

    // Now active: the next post is pushed to them.
    await h.publish(
      event('post.published', { postId: `i-6-${author}`, authorId: author, title: 't6', excerpt: '' }, at(700)),
    );
    await eventually(
      'pushed to the returning user',
      async () => (await h.redis.zscore(`f:${inactive}`, `i-6-${author}`)) !== null,
    );
    expect((await h.feed(inactive, { limit: 1 })).body.items[0].postId).toBe(`i-6-${author}`);
  });
});
