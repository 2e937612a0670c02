import type { Pool, PoolClient } from 'pg';
import { claimEvents, processedAtBy } from '@community/idempotency';

/** What Redis must forget of an erased user, read from the projections before they are deleted. */
export interface ErasureFootprint {
  /** The user's posts (their bodies p:<post> and their place in other users' feeds). */
  postIds: string[];
  /** The user's current followers: the feeds the posts were fanned out to. */
  followerIds: string[];
}

export interface ErasureCounts {
  follows: number;
  posts: number;
}

/** Whether this consumer already erased for this event (the inbox has its claim). */
export async function alreadyErased(pool: Pool, consumer: string, eventId: string): Promise<boolean> {
  return (await processedAtBy(pool, [consumer], eventId)).has(consumer);
}

export async function footprint(pool: Pool, userId: string): Promise<ErasureFootprint> {
  const [posts, followers] = await Promise.all([
    pool.query<{ post_id: string }>(`SELECT post_id FROM feed_posts WHERE author_id = $1`, [userId]),
    pool.query<{ follower_id: string }>(`SELECT follower_id FROM feed_follows WHERE followee_id = $1 AND active`, [
      userId,
    ]),
  ]);
  return { postIds: posts.rows.map((r) => r.post_id), followerIds: followers.rows.map((r) => r.follower_id) };
}

/**
 * Deletes a user from feed-service's projections, inside the caller's transaction, after claiming
 * the event in the inbox: null when it was processed already.
 *
 * - feed_follows: every edge the user is part of, as follower or followee; the authors the user
 *   followed lose one follower (feed_authors.follower_count, as an unfollow would), so their next
 *   fan-out is sized right.
 * - feed_posts (title and excerpt: the user's content) and their fan-out jobs (the chunks follow by
 *   their foreign key): a chunk still queued finds no job and does nothing.
 * - feed_authors and feed_user_activity rows of the user.
 * Nothing is anonymised here: no other user's row holds anything of the erased user's but the
 * edges and posts deleted above.
 */
export async function eraseUser(
  tx: PoolClient,
  consumer: string,
  eventId: string,
  userId: string,
): Promise<ErasureCounts | null> {
  if ((await claimEvents(tx, consumer, [eventId])).length === 0) return null;
  const follows = await tx.query<{ followee_id: string; active: boolean; follower_id: string }>(
    `DELETE FROM feed_follows WHERE follower_id = $1 OR followee_id = $1 RETURNING follower_id, followee_id, active`,
    [userId],
  );
  const followees = follows.rows
    .filter((r) => r.active && r.follower_id === userId && r.followee_id !== userId)
    .map((r) => r.followee_id)
    .sort();
  if (followees.length) {
    await tx.query(
      `UPDATE feed_authors SET follower_count = GREATEST(follower_count - 1, 0) WHERE author_id = ANY($1::text[])`,
      [followees],
    );
  }
  await tx.query(`DELETE FROM feed_fanout_jobs WHERE author_id = $1`, [userId]);
  const posts = await tx.query(`DELETE FROM feed_posts WHERE author_id = $1`, [userId]);
  await tx.query(`DELETE FROM feed_authors WHERE author_id = $1`, [userId]);
  await tx.query(`DELETE FROM feed_user_activity WHERE user_id = $1`, [userId]);
  return { follows: follows.rowCount ?? 0, posts: posts.rowCount ?? 0 };
}
