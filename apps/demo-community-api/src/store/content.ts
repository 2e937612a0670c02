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
