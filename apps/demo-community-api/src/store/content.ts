import { randomUUID } from 'node:crypto';
import type { PoolClient } from 'pg';

/** Posts, comments, reactions and security alerts: each write runs in the caller's transaction. */

export async function insertPost(
  tx: PoolClient,
  post: { id: string; authorId: string; title: string; body: string },
): Promise<Date> {
  const { rows } = await tx.query<{ created_at: Date }>(
    'INSERT INTO community_posts (id, author_id, title, body) VALUES ($1, $2, $3, $4) RETURNING created_at',
    [post.id, post.authorId, post.title, post.body],
  );
  return rows[0].created_at;
}

/** The author of a post; undefined when there is no such post. */
export async function postAuthor(tx: PoolClient, postId: string): Promise<string | undefined> {
  const { rows } = await tx.query<{ author_id: string }>('SELECT author_id FROM community_posts WHERE id = $1', [
    postId,
  ]);
  return rows[0]?.author_id;
}

/** The author of a comment (on `postId` when given); undefined when there is no such comment. */
export async function commentAuthor(tx: PoolClient, commentId: string, postId?: string): Promise<string | undefined> {
  const { rows } = await tx.query<{ author_id: string }>(
    'SELECT author_id FROM community_comments WHERE id = $1 AND ($2::text IS NULL OR post_id = $2)',
    [commentId, postId ?? null],
  );
  return rows[0]?.author_id;
}

export async function insertComment(
  tx: PoolClient,
  comment: { id: string; postId: string; authorId: string; parentCommentId?: string; body: string },
): Promise<Date> {
  const { rows } = await tx.query<{ created_at: Date }>(
    'INSERT INTO community_comments (id, post_id, author_id, parent_comment_id, body) VALUES ($1, $2, $3, $4, $5) RETURNING created_at',
    [comment.id, comment.postId, comment.authorId, comment.parentCommentId ?? null, comment.body],
  );
  return rows[0].created_at;
}

/** Adds a reaction; the same reaction again returns the existing one with `created: false`. */
export async function addReaction(
  tx: PoolClient,
  reaction: { targetType: 'post' | 'comment'; targetId: string; actorId: string; emoji: string },
): Promise<{ id: string; createdAt: Date; created: boolean }> {
  const { targetType, targetId, actorId, emoji } = reaction;
  const inserted = await tx.query<{ id: string; created_at: Date }>(
    `INSERT INTO community_reactions (id, target_type, target_id, actor_id, emoji) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (actor_id, target_type, target_id, emoji) DO NOTHING RETURNING id, created_at`,
    [randomUUID(), targetType, targetId, actorId, emoji],
  );
  if (inserted.rowCount) return { id: inserted.rows[0].id, createdAt: inserted.rows[0].created_at, created: true };
  const existing = await tx.query<{ id: string; created_at: Date }>(
    'SELECT id, created_at FROM community_reactions WHERE actor_id = $1 AND target_type = $2 AND target_id = $3 AND emoji = $4',
    [actorId, targetType, targetId, emoji],
  );
  return { id: existing.rows[0].id, createdAt: existing.rows[0].created_at, created: false };
}

export async function insertSecurityAlert(
  tx: PoolClient,
  alert: { id: string; userId: string; kind: string; detail: string },
): Promise<Date> {
  const { rows } = await tx.query<{ created_at: Date }>(
    'INSERT INTO community_security_alerts (id, user_id, kind, detail) VALUES ($1, $2, $3, $4) RETURNING created_at',
    [alert.id, alert.userId, alert.kind, alert.detail],
  );
  return rows[0].created_at;
}

/** A comment's author and post; undefined when there is no such comment. */
export async function commentOf(
  tx: PoolClient,
  commentId: string,
): Promise<{ authorId: string; postId: string } | undefined> {
  const { rows } = await tx.query<{ author_id: string; post_id: string }>(
    'SELECT author_id, post_id FROM community_comments WHERE id = $1',
    [commentId],
  );
  return rows[0] ? { authorId: rows[0].author_id, postId: rows[0].post_id } : undefined;
}

/**
 * Deletes a post with its comments and every reaction on the post or on its comments (locked first:
 * a comment or reaction being added concurrently waits, then finds no post). Undefined when there
 * is no such post. One `post.deleted` withdraws all they caused (docs/NOTIFICATIONS.md "Retraction").
 */
export async function deletePost(
  tx: PoolClient,
  postId: string,
): Promise<{ authorId: string; comments: number; reactions: number } | undefined> {
  const post = await tx.query<{ author_id: string }>('SELECT author_id FROM community_posts WHERE id = $1 FOR UPDATE', [
    postId,
  ]);
  if (!post.rowCount) return undefined;
  const reactions = await tx.query(
    `DELETE FROM community_reactions
      WHERE (target_type = 'post' AND target_id = $1)
         OR (target_type = 'comment' AND target_id IN (SELECT id FROM community_comments WHERE post_id = $1))`,
    [postId],
  );
  // One statement for every comment of the post, replies included: the self-reference is checked at its end.
  const comments = await tx.query('DELETE FROM community_comments WHERE post_id = $1', [postId]);
  await tx.query('DELETE FROM community_posts WHERE id = $1', [postId]);
  return { authorId: post.rows[0].author_id, comments: comments.rowCount ?? 0, reactions: reactions.rowCount ?? 0 };
}

/** One comment deleted with `deleteCommentThread`, and the user its comment.created was ordered under. */
export interface DeletedComment {
  commentId: string;
  postId: string;
  authorId: string;
  /** The author of the comment it replied to, else of the post: the aggregate of its comment.created. */
  notifiedId: string;
}

/**
 * Deletes a comment and the replies under it (a reply without its parent would dangle), with the
 * reactions on all of them, and answers them parent first. Empty when there is no such comment.
 */
export async function deleteCommentThread(tx: PoolClient, commentId: string): Promise<DeletedComment[]> {
  // The post row locked first, as deletePost does, so the two never wait on each other in opposite orders.
  await tx.query(
    'SELECT 1 FROM community_posts WHERE id = (SELECT post_id FROM community_comments WHERE id = $1) FOR UPDATE',
    [commentId],
  );
  const { rows } = await tx.query<{ id: string; post_id: string; author_id: string; notified_id: string }>(
    `WITH RECURSIVE thread AS (
       SELECT c.id, c.post_id, c.author_id, c.parent_comment_id, 0 AS depth
         FROM community_comments c WHERE c.id = $1
       UNION ALL
       SELECT r.id, r.post_id, r.author_id, r.parent_comment_id, t.depth + 1
         FROM community_comments r JOIN thread t ON r.parent_comment_id = t.id
     )
     SELECT t.id, t.post_id, t.author_id, COALESCE(parent.author_id, p.author_id) AS notified_id
       FROM thread t
       JOIN community_posts p ON p.id = t.post_id
       LEFT JOIN community_comments parent ON parent.id = t.parent_comment_id
      ORDER BY t.depth, t.id`,
    [commentId],
  );
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  await tx.query(`DELETE FROM community_reactions WHERE target_type = 'comment' AND target_id = ANY($1::text[])`, [
    ids,
  ]);
  await tx.query('DELETE FROM community_comments WHERE id = ANY($1::text[])', [ids]);
  return rows.map((r) => ({ commentId: r.id, postId: r.post_id, authorId: r.author_id, notifiedId: r.notified_id }));
}

/** Takes a reaction back; undefined when there is no such reaction. */
export async function removeReaction(
  tx: PoolClient,
  reactionId: string,
): Promise<{ actorId: string; targetType: 'post' | 'comment'; targetId: string; emoji: string } | undefined> {
  const { rows } = await tx.query<{
    actor_id: string;
    target_type: 'post' | 'comment';
    target_id: string;
    emoji: string;
  }>('DELETE FROM community_reactions WHERE id = $1 RETURNING actor_id, target_type, target_id, emoji', [reactionId]);
  const r = rows[0];
  return r ? { actorId: r.actor_id, targetType: r.target_type, targetId: r.target_id, emoji: r.emoji } : undefined;
}
