/**
 * feed-service's projections (prisma/schema/feed.prisma): the follow graph, authors, posts and
 * user activity. Free functions taking the pool or a transaction's client first
 * (docs/SERVICE-TEMPLATE.md "Stores").
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import { applyFollowEvent, type EdgeState } from '../domain/follow-state';

type Db = Pool | PoolClient;

export interface PostRow {
  postId: string;
  authorId: string;
  title: string;
  excerpt: string;
  publishedAt: Date;
}

export interface PostInput extends PostRow {
  pushed: boolean;
}

/** Records that a user did something at `at` (never moves the time back). */
export async function recordActivity(db: Db, userId: string, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO feed_user_activity (user_id, last_active_at) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET last_active_at = GREATEST(feed_user_activity.last_active_at, EXCLUDED.last_active_at)`,
    [userId, at],
  );
}

/**
 * A feed read marks its reader active, at most once per `throttleMs` (a write per read would cost
 * more than the read). True when it did: the caller then extends the feed's expiry to match.
 */
export async function touchReader(db: Db, userId: string, throttleMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO feed_user_activity (user_id, last_active_at) VALUES ($1, now())
     ON CONFLICT (user_id) DO UPDATE SET last_active_at = now()
     WHERE feed_user_activity.last_active_at < now() - make_interval(secs => $2::double precision / 1000)`,
    [userId, throttleMs],
  );
  return (rowCount ?? 0) > 0;
}

export interface FollowResult {
  /** Whether the stored edge changed its `active` state. */
  changed: boolean;
  /** The edge's state after the event (the latest occurredAt's). */
  active: boolean;
}

/**
 * Applies a follow (active) or unfollow event to the edge under a row lock, by occurredAt
 * (domain/follow-state.ts), and keeps the followee's follower count in the same transaction.
 * `signal` (the handler's deadline) cancels it: rolled back, never committed after the abort.
 */
export async function applyFollow(
  pool: Pool,
  followerId: string,
  followeeId: string,
  event: EdgeState,
  signal?: AbortSignal,
): Promise<FollowResult> {
  return withTransaction(pool, { signal }, async (tx) => {
    let current = await lockEdge(tx, followerId, followeeId);
    if (current === undefined) {
      const inserted = await tx.query(
        `INSERT INTO feed_follows (follower_id, followee_id, active, occurred_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING`,
        [followerId, followeeId, event.active, event.occurredAt],
      );
      if (inserted.rowCount === 1) {
        if (event.active) await addFollowers(tx, followeeId, 1);
        return { changed: event.active, active: event.active };
      }
      current = await lockEdge(tx, followerId, followeeId); // a concurrent first event won the insert
    }
    const { next, changed } = applyFollowEvent(current, event);
    if (next === undefined) return { changed: false, active: current!.active };
    await tx.query(
      `UPDATE feed_follows SET active = $3, occurred_at = $4 WHERE follower_id = $1 AND followee_id = $2`,
      [followerId, followeeId, next.active, next.occurredAt],
    );
    if (changed) await addFollowers(tx, followeeId, next.active ? 1 : -1);
    return { changed, active: next.active };
  });
}

async function lockEdge(tx: PoolClient, followerId: string, followeeId: string): Promise<EdgeState | undefined> {
  const { rows } = await tx.query<{ active: boolean; occurred_at: Date }>(
    `SELECT active, occurred_at FROM feed_follows WHERE follower_id = $1 AND followee_id = $2 FOR UPDATE`,
    [followerId, followeeId],
  );
  return rows[0] ? { active: rows[0].active, occurredAt: rows[0].occurred_at } : undefined;
}

async function addFollowers(tx: PoolClient, authorId: string, delta: number): Promise<void> {
  await tx.query(
    `INSERT INTO feed_authors (author_id, follower_count) VALUES ($1, GREATEST($2::int, 0))
     ON CONFLICT (author_id) DO UPDATE SET follower_count = GREATEST(feed_authors.follower_count + $2::int, 0)`,
    [authorId, delta],
  );
}

export async function isFollowing(db: Db, followerId: string, followeeId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM feed_follows WHERE follower_id = $1 AND followee_id = $2 AND active`, [
    followerId,
    followeeId,
  ]);
  return rows.length > 0;
}

export async function followerCount(db: Db, authorId: string): Promise<number> {
  const { rows } = await db.query<{ follower_count: number }>(
    `SELECT follower_count FROM feed_authors WHERE author_id = $1`,
    [authorId],
  );
  return rows[0]?.follower_count ?? 0;
}

/**
 * Inserts the post once; returns the stored row (the first recording wins: a duplicate event changes
 * nothing), or null for a deleted post (its tombstone: post.deleted came first). An unpushed post marks its author `has_unpushed`, also on a redelivery: the two
 * statements are not one transaction, and a crash between them would otherwise leave a post that
 * is neither fanned out nor merged at read time.
 */
export async function recordPost(db: Pool, post: PostInput): Promise<(PostInput & { inserted: boolean }) | null> {
  // The post's lock, then the tombstone check and the insert: a deletePost committing beside this
  // one is either seen (this returns null) or waits and deletes the row this inserted.
  const rows = await withTransaction(db, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('feed-post:' || $1, 0))`, [post.postId]);
    const inserted = await tx.query(
      `INSERT INTO feed_posts (post_id, author_id, title, excerpt, published_at, pushed)
       SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM feed_post_deletions WHERE post_id = $1)
       ON CONFLICT (post_id) DO NOTHING RETURNING post_id`,
      [post.postId, post.authorId, post.title, post.excerpt, post.publishedAt, post.pushed],
    );
    if (inserted.rows.length === 0) {
      const deleted = await tx.query(`SELECT 1 FROM feed_post_deletions WHERE post_id = $1`, [post.postId]);
      if (deleted.rows.length > 0) return null;
    }
    return inserted.rows;
  });
  if (rows === null) return null;
  const stored =
    rows.length === 1
      ? { ...post, inserted: true }
      : await db.query(`SELECT ${POST_COLUMNS}, pushed FROM feed_posts p WHERE post_id = $1`, [post.postId]).then((r) =>
          // Gone since: deleted (post.deleted) or erased in between.
          r.rows[0] ? { ...toPost(r.rows[0]), pushed: r.rows[0].pushed as boolean, inserted: false } : null,
        );
  if (stored === null) return null;
  if (!stored.pushed) {
    await db.query(
      `INSERT INTO feed_authors (author_id, has_unpushed) VALUES ($1, true)
       ON CONFLICT (author_id) DO UPDATE SET has_unpushed = true WHERE NOT feed_authors.has_unpushed`,
      [post.authorId],
    );
  }
  return stored;
}

/**
 * post.deleted: the tombstone, the post's row and its fan-out job (its chunks follow by their
 * foreign key, so a chunk still queued does nothing), under the post's lock (see recordPost).
 * Returns the followers whose Redis feeds may hold it. Idempotent: a redelivery finds nothing more.
 */
export async function deletePost(pool: Pool, postId: string, authorId: string): Promise<string[]> {
  return withTransaction(pool, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('feed-post:' || $1, 0))`, [postId]);
    await tx.query(`INSERT INTO feed_post_deletions (post_id) VALUES ($1) ON CONFLICT (post_id) DO NOTHING`, [postId]);
    await tx.query(`DELETE FROM feed_fanout_jobs WHERE post_id = $1`, [postId]);
    await tx.query(`DELETE FROM feed_posts WHERE post_id = $1`, [postId]);
    const followers = await tx.query<{ follower_id: string }>(
      `SELECT follower_id FROM feed_follows WHERE followee_id = $1 AND active`,
      [authorId],
    );
    return followers.rows.map((r) => r.follower_id);
  });
}

export const POST_COLUMNS = 'p.post_id, p.author_id, p.title, p.excerpt, p.published_at';

export function toPost(row: Record<string, unknown>): PostRow {
  return {
    postId: row.post_id as string,
    authorId: row.author_id as string,
    title: row.title as string,
    excerpt: row.excerpt as string,
    publishedAt: row.published_at as Date,
  };
}

export async function postsByIds(db: Db, ids: string[]): Promise<PostRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query(`SELECT ${POST_COLUMNS} FROM feed_posts p WHERE p.post_id = ANY($1::text[])`, [ids]);
  return rows.map(toPost);
}

/** The author's newest fanned-out posts (a follow's backfill, an unfollow's removal). */
export async function latestPushedPosts(db: Db, authorId: string, limit: number): Promise<PostRow[]> {
  const { rows } = await db.query(
    `SELECT ${POST_COLUMNS} FROM feed_posts p WHERE p.author_id = $1 AND p.pushed ORDER BY p.published_at DESC, p.post_id DESC LIMIT $2`,
    [authorId, limit],
  );
  return rows.map(toPost);
}

export interface PageQuery {
  /** Exclusive keyset bound: (publishedAt ms, postId) of the previous page's last item. */
  cursor?: { at: number; postId: string };
  limit: number;
}

/**
 * The user's feed straight from the projections, newest first: the posts of everyone they
 * follow (`which`: all posts, only fanned-out ones for a rebuild, only the large authors' for the
 * read-time merge). One index range per followee (LATERAL … LIMIT) instead of sorting every post
 * of every followee. This is the truth the Redis feed caches.
 */
export async function feedFromProjections(
  db: Db,
  userId: string,
  which: 'all' | 'pushed' | 'unpushed',
  page: PageQuery,
): Promise<PostRow[]> {
  const params: unknown[] = [userId, page.limit];
  let bound = '';
  if (page.cursor) {
    params.push(new Date(page.cursor.at).toISOString(), page.cursor.postId);
    bound = 'AND (p.published_at, p.post_id) < ($3::timestamptz, $4::text)';
  }
  const filter = which === 'pushed' ? 'AND p.pushed' : which === 'unpushed' ? 'AND NOT p.pushed' : '';
  const authors = which === 'unpushed' ? 'JOIN feed_authors a ON a.author_id = f.followee_id AND a.has_unpushed' : '';
  const { rows } = await db.query(
    `SELECT ${POST_COLUMNS.replace(/p\./g, 'x.')} FROM feed_follows f ${authors}
     CROSS JOIN LATERAL (
       SELECT ${POST_COLUMNS} FROM feed_posts p
       WHERE p.author_id = f.followee_id ${filter} ${bound}
       ORDER BY p.published_at DESC, p.post_id DESC LIMIT $2
     ) x
     WHERE f.follower_id = $1 AND f.active
     ORDER BY x.published_at DESC, x.post_id DESC LIMIT $2`,
    params,
  );
  return rows.map(toPost);
}
