// feed-service's retention (store/retention.ts, which the reconciler schedules as `retention.feed`)
// against a private migrated database: done fan-outs past the horizon go with their chunks, old posts
// go once no feed needs them, and what a follower's feed holds is the same before and after.
import type { Pool } from 'pg';
import { createPgPool } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { expectedFeed, purgeFeedHistory } from '../src';
import { feedFromProjections } from '../src/store/projections';

const DAY = 86_400_000;
const CAP = 3;
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('feed_retention');
  pool = createPgPool(db.url, { max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** A post of `author` published `daysAgo` days ago (fractions order posts of the same day). */
async function post(id: string, author: string, daysAgo: number, pushed = true): Promise<void> {
  await pool.query(
    `INSERT INTO feed_posts (post_id, author_id, title, excerpt, published_at, pushed)
     VALUES ($1, $2, $1, '', now() - $3::float8 * interval '1 day', $4)`,
    [id, author, daysAgo, pushed],
  );
}

/** The fan-out job of `postId` with `chunks` chunks, done `doneDaysAgo` days ago (null: not done). */
async function job(postId: string, chunks: number, doneDaysAgo: number | null): Promise<void> {
  await pool.query(
    `INSERT INTO feed_fanout_jobs (post_id, author_id, published_at, active_since, chunks_total, chunks_done, planned_at, done_at)
     VALUES ($1, 'a', now() - interval '41 days', now() - interval '48 days', $2, $3, now() - interval '41 days',
             now() - $4::float8 * interval '1 day')`,
    [postId, chunks, doneDaysAgo === null ? 0 : chunks, doneDaysAgo],
  );
  for (let i = 0; i < chunks; i++) {
    await pool.query(
      `INSERT INTO feed_fanout_chunks (post_id, chunk_no, after_follower, through_follower, attempts, done_at)
       VALUES ($1, $2, '', 'z', 1, CASE WHEN $3 THEN now() END)`,
      [postId, i, doneDaysAgo !== null],
    );
  }
}

const ids = async (table: string) =>
  (await pool.query<{ id: string }>(`SELECT DISTINCT post_id AS id FROM ${table} ORDER BY 1`)).rows.map((r) => r.id);

it('deletes done fan-outs past the horizon and the posts no feed needs, and no follower sees a difference', async () => {
  // Author a: five old fanned-out posts and a recent one. With a cap of 3, a1–a3 are past every feed.
  for (const [id, days] of [
    ['a1', 45],
    ['a2', 44],
    ['a3', 43],
    ['a4', 42],
    ['a5', 41],
    ['a6', 1],
  ] as const)
    await post(id, 'a', days);
  // b: two old posts, fewer than the cap: every feed that follows b still shows them.
  await post('b1', 'b', 90);
  await post('b2', 'b', 80);
  // A large author: four old posts merged at read time (kept per kind: its one old pushed post stays).
  for (const [id, days] of [
    ['big1', 60],
    ['big2', 59],
    ['big3', 58],
    ['big4', 57],
  ] as const)
    await post(id, 'big', days, false);
  await post('big-pushed', 'big', 70);
  await pool.query(`INSERT INTO feed_authors (author_id, follower_count, has_unpushed) VALUES ('big', 1, true)`);
  // Fan-outs: done 40 days ago (gone, with its chunks), done 10 days ago (kept), and one of a2 that
  // never finished: work in progress, kept, and so is its post.
  await job('a1', 2, 40);
  await job('a5', 1, 10);
  await job('a2', 2, null);
  await pool.query(
    `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at)
     VALUES ('f', 'a', true, now()), ('f', 'b', true, now()), ('f', 'big', true, now())`,
  );
  // What f's feed holds: its materialised entries, and the large author's posts merged at read time.
  const feedOf = async () => ({
    pushed: await expectedFeed(pool, 'f', CAP),
    merged: (await feedFromProjections(pool, 'f', 'unpushed', { limit: CAP })).map((p) => p.postId),
  });
  const feedBefore = await feedOf();
  expect(feedBefore.merged).toEqual(['big4', 'big3', 'big2']);

  const options = { olderThanMs: 30 * DAY, cap: CAP, batchSize: 1 };
  const expected = { fanoutJobs: 1, fanoutChunks: 2, posts: 3 };
  expect(await purgeFeedHistory(pool, { ...options, dryRun: true })).toEqual(expected);
  expect(await ids('feed_posts')).toHaveLength(13);
  expect(await purgeFeedHistory(pool, options)).toEqual(expected);

  expect(await ids('feed_posts')).toEqual(['a2', 'a4', 'a5', 'a6', 'b1', 'b2', 'big-pushed', 'big2', 'big3', 'big4']);
  expect(await ids('feed_fanout_jobs')).toEqual(['a2', 'a5']);
  expect(await ids('feed_fanout_chunks')).toEqual(['a2', 'a5']);
  expect(await feedOf()).toEqual(feedBefore);
  // A second run finds nothing more.
  expect(await purgeFeedHistory(pool, options)).toEqual({ fanoutJobs: 0, fanoutChunks: 0, posts: 0 });
});
