import type { Pool } from 'pg';

/**
 * Retention of the fan-out bookkeeping and of old posts, exported for the reconciler to schedule
 * (job `retention.feed`); it runs in the reconciler's process, this SQL stays here (docs/FEED.md
 * "Retention"). Short batches, each its own statement, so a run can stop at any point (the next
 * run continues).
 *
 * - A fan-out job that is done, with its chunk checkpoints, once done longer than the horizon. A
 *   job not done is work in progress (the stuck-work check re-drives it), whatever its age. A late
 *   copy of its post.published after the purge plans the fan-out again: that spares no feed a
 *   duplicate (a feed is a sorted set, and the entries written are ones the feed should hold), it
 *   only costs the work.
 * - A post older than the horizon that no feed needs any more: its author has at least `cap`
 *   newer posts of the same kind (fanned out, or merged at read time), so it is past the first
 *   `cap` entries of every feed of every follower (a rebuild, a backfill and an unfollow's removal
 *   all take the newest `cap`), and no unfinished fan-out still writes it. Only a page read past
 *   the cap, from Postgres, still reached it.
 */
export interface FeedPurgeOptions {
  olderThanMs: number;
  /** FEED_CAP: entries per feed. */
  cap: number;
  batchSize: number;
  signal?: AbortSignal;
  /** Count what would be deleted, delete nothing. */
  dryRun?: boolean;
}

export interface FeedPurgeCounts {
  fanoutJobs: number;
  fanoutChunks: number;
  posts: number;
  [name: string]: number;
}

const HORIZON = `now() - $1::float8 * interval '1 millisecond'`;
const DONE_JOBS = `FROM feed_fanout_jobs j WHERE j.done_at < ${HORIZON}`;
/** $2: the cap. The cap-th newest post of the author of the same kind; none: fewer than cap, keep all. */
const UNNEEDED_POSTS = `FROM feed_posts p
  WHERE p.published_at < ${HORIZON}
    AND (p.published_at, p.post_id) < (SELECT n.published_at, n.post_id FROM feed_posts n
                                        WHERE n.author_id = p.author_id AND n.pushed = p.pushed
                                        ORDER BY n.published_at DESC, n.post_id DESC OFFSET $2::int - 1 LIMIT 1)
    AND NOT EXISTS (SELECT 1 FROM feed_fanout_jobs j WHERE j.post_id = p.post_id AND j.done_at IS NULL)`;

export async function purgeFeedHistory(pool: Pool, o: FeedPurgeOptions): Promise<FeedPurgeCounts> {
  if (!(o.cap >= 1)) throw new RangeError(`feed retention needs the feed cap (got ${o.cap})`);
  if (o.dryRun) {
    const res = await pool.query<{ jobs: number; chunks: number; posts: number }>(
      `SELECT (SELECT count(*) ${DONE_JOBS})::int AS jobs,
              (SELECT count(*) FROM feed_fanout_chunks c WHERE c.post_id IN (SELECT j.post_id ${DONE_JOBS}))::int AS chunks,
              (SELECT count(*) ${UNNEEDED_POSTS})::int AS posts`,
      [o.olderThanMs, o.cap],
    );
    return { fanoutJobs: res.rows[0].jobs, fanoutChunks: res.rows[0].chunks, posts: res.rows[0].posts };
  }
  const counts: FeedPurgeCounts = { fanoutJobs: 0, fanoutChunks: 0, posts: 0 };
  // Jobs first: a post whose job is gone no longer waits on it. Chunks are deleted explicitly, to be
  // counted (the cascade would find none left); a job takes all its chunks, so a tenth as many jobs.
  const jobBatch = Math.max(1, Math.ceil(o.batchSize / 10));
  for (;;) {
    o.signal?.throwIfAborted();
    const res = await pool.query<{ jobs: number; chunks: number }>(
      `WITH doomed AS (SELECT j.post_id ${DONE_JOBS} ORDER BY j.done_at LIMIT $2),
            chunks AS (DELETE FROM feed_fanout_chunks WHERE post_id IN (SELECT post_id FROM doomed) RETURNING 1),
            jobs AS (DELETE FROM feed_fanout_jobs WHERE post_id IN (SELECT post_id FROM doomed) RETURNING 1)
       SELECT (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM chunks)::int AS chunks`,
      [o.olderThanMs, jobBatch],
    );
    counts.fanoutJobs += res.rows[0].jobs;
    counts.fanoutChunks += res.rows[0].chunks;
    if (res.rows[0].jobs < jobBatch) break;
  }
  for (;;) {
    o.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM feed_posts WHERE post_id IN (SELECT p.post_id ${UNNEEDED_POSTS} ORDER BY p.published_at LIMIT $3)`,
      [o.olderThanMs, o.cap, o.batchSize],
    );
    counts.posts += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < o.batchSize) break;
  }
  return counts;
}
