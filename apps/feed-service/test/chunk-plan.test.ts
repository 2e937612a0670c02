import { createTestDatabase, type TestDatabase } from '@community/testing';
import { createPgPool } from '@community/db';
import type { Pool } from 'pg';
import { chunkFollowers } from '../src/store/fanout';

/**
 * A fan-out chunk costs in proportion to its size, not to the user table's: the chunk's follower
 * query must never scan every user's activity row. With the activity check written as a plain join,
 * Postgres planned a parallel hash join over the whole of feed_user_activity for each chunk once the
 * table held ~200,000 users (found with auto_explain in bench:feed); this reproduces that table and
 * asks Postgres for the plan of the query chunkFollowers sends.
 */
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('feed_chunk_plan');
  pool = createPgPool(db.url, { max: 2 });
  await pool.query(
    `INSERT INTO feed_follows SELECT 'u-' || lpad(i::text, 7, '0'), 'big', true, now() - interval '1 day' FROM generate_series(1, 200000) i`,
  );
  await pool.query(
    `INSERT INTO feed_user_activity SELECT 'u-' || lpad(i::text, 7, '0'), now() FROM generate_series(1, 200000) i`,
  );
  await pool.query('ANALYZE feed_follows, feed_user_activity');
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

it('probes the activity of the chunk’s followers by index, never scanning the activity table', async () => {
  const activeSince = new Date(Date.now() - 8 * 86_400_000);
  const range = { chunkNo: 0, afterFollower: 'u-0100000', throughFollower: 'u-0101000' };
  // The query chunkFollowers sends, explained instead of run.
  let plan = '';
  const explaining = {
    query: async (text: string, params: unknown[]) => {
      const { rows } = await pool.query(`EXPLAIN ${text}`, params);
      plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      return { rows: [] };
    },
  } as unknown as Pool;
  await chunkFollowers(explaining, 'big', range, activeSince);
  expect(plan).toMatch(/Index Scan using feed_user_activity_pkey/);
  expect(plan).not.toMatch(/Seq Scan on feed_user_activity/);

  // And it answers the chunk: the 1,000 followers of the range, in order.
  const followers = await chunkFollowers(pool, 'big', range, activeSince);
  expect(followers).toHaveLength(1000);
  expect(followers[0]).toBe('u-0100001');
  expect(followers[999]).toBe('u-0101000');
  // A follower not seen within the window is not written.
  await pool.query(
    `UPDATE feed_user_activity SET last_active_at = now() - interval '30 days' WHERE user_id = 'u-0100500'`,
  );
  expect(await chunkFollowers(pool, 'big', range, activeSince)).not.toContain('u-0100500');
});
