import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import { actingUser } from '../actor';
import { ApiError } from '../errors';
import { EventBatch, excerpt } from '../events';
import { resolveMentions } from '../mentions';
import { AddReactionBody, CreateCommentBody, CreatePostBody, PostParams } from '../schemas';

export function registerContentRoutes(app: FastifyInstance, pool: Pool): void {
  app.post<{ Body: CreatePostBody }>('/v1/posts', { schema: { body: CreatePostBody } }, async (request, reply) => {
    const authorId = await actingUser(request, pool);
    const { title, body } = request.body;
    const id = randomUUID();
    const row = await withTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ created_at: Date }>(
        'INSERT INTO community_posts (id, author_id, title, body) VALUES ($1, $2, $3, $4) RETURNING created_at',
        [id, authorId, title, body],
      );
      // Ordered under the author: the followers' feeds are derived from the author's activity.
      await new EventBatch(request.id).add('post.published', { postId: id, authorId, title, excerpt: excerpt(body) }, authorId).enqueue(tx);
      return rows[0];
    });
    return reply.code(201).send({ id, authorId, title, body, createdAt: row.created_at });
  });

  app.post<{ Params: PostParams; Body: CreateCommentBody }>(
    '/v1/posts/:postId/comments',
    { schema: { params: PostParams, body: CreateCommentBody } },
    async (request, reply) => {
      const authorId = await actingUser(request, pool);
      const { postId } = request.params;
      const { body, parentCommentId } = request.body;
      const id = randomUUID();
      const result = await withTransaction(pool, async (tx) => {
        const post = await tx.query<{ author_id: string }>('SELECT author_id FROM community_posts WHERE id = $1', [postId]);
        if (!post.rowCount) throw new ApiError('POST_NOT_FOUND', postId);
        const postAuthorId = post.rows[0].author_id;
        let parentAuthorId: string | undefined;
        if (parentCommentId !== undefined) {
          const parent = await tx.query<{ author_id: string }>('SELECT author_id FROM community_comments WHERE id = $1 AND post_id = $2', [parentCommentId, postId]);
          if (!parent.rowCount) throw new ApiError('PARENT_COMMENT_NOT_FOUND', parentCommentId, postId);
          parentAuthorId = parent.rows[0].author_id;
        }
        const { rows } = await tx.query<{ created_at: Date }>(
          'INSERT INTO community_comments (id, post_id, author_id, parent_comment_id, body) VALUES ($1, $2, $3, $4, $5) RETURNING created_at',
          [id, postId, authorId, parentCommentId ?? null, body],
        );
        const mentionedUserIds = await resolveMentions(tx, body, authorId);
        const text = excerpt(body);
        const events = new EventBatch(request.id).add(
          'comment.created',
          { commentId: id, postId, postAuthorId, authorId, parentCommentId, parentAuthorId, excerpt: text },
          // The user this comment notifies: the author of the comment replied to, else of the post.
          parentAuthorId ?? postAuthorId,
        );
        for (const mentionedUserId of mentionedUserIds) {
          events.add('user.mentioned', { commentId: id, postId, actorId: authorId, mentionedUserId, excerpt: text }, mentionedUserId);
        }
        await events.enqueue(tx);
        return { createdAt: rows[0].created_at, mentionedUserIds };
      });
      return reply.code(201).send({ id, postId, authorId, parentCommentId: parentCommentId ?? null, body, ...result });
    },
  );

  app.post<{ Body: AddReactionBody }>('/v1/reactions', { schema: { body: AddReactionBody } }, async (request, reply) => {
    const actorId = await actingUser(request, pool);
    const { targetType, targetId, emoji } = request.body;
    const result = await withTransaction(pool, async (tx) => {
      const table = targetType === 'post' ? 'community_posts' : 'community_comments';
      const target = await tx.query<{ author_id: string }>(`SELECT author_id FROM ${table} WHERE id = $1`, [targetId]);
      if (!target.rowCount) throw new ApiError('TARGET_NOT_FOUND', targetType, targetId);
      const targetAuthorId = target.rows[0].author_id;
      const inserted = await tx.query<{ id: string; created_at: Date }>(
        `INSERT INTO community_reactions (id, target_type, target_id, actor_id, emoji) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (actor_id, target_type, target_id, emoji) DO NOTHING RETURNING id, created_at`,
        [randomUUID(), targetType, targetId, actorId, emoji],
      );
      if (inserted.rowCount) {
        const reactionId = inserted.rows[0].id;
        await new EventBatch(request.id)
          .add('reaction.added', { reactionId, actorId, targetType, targetId, targetAuthorId, emoji }, targetAuthorId)
          .enqueue(tx);
        return { id: reactionId, createdAt: inserted.rows[0].created_at, created: true };
      }
      // The same reaction again: nothing changes, nobody is notified twice.
      const existing = await tx.query<{ id: string; created_at: Date }>(
        'SELECT id, created_at FROM community_reactions WHERE actor_id = $1 AND target_type = $2 AND target_id = $3 AND emoji = $4',
        [actorId, targetType, targetId, emoji],
      );
      return { id: existing.rows[0].id, createdAt: existing.rows[0].created_at, created: false };
    });
    const { created, ...reaction } = result;
    return reply.code(created ? 201 : 200).send({ ...reaction, actorId, targetType, targetId, emoji });
  });
}
