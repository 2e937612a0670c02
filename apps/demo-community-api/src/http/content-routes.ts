import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import { excerpt, MAX_HANDLES, mentionedUsers, parseHandles } from '../domain/mentions';
import { addReaction, commentAuthor, insertComment, insertPost, postAuthor } from '../store/content';
import { EventBatch } from '../store/outbox';
import { resolveHandles } from '../store/users';
import type { WriteGuards } from './write-guards';
import { actingUser } from './actor';
import { ERRORS } from './errors';
import { AddReactionBody, CreateCommentBody, CreatePostBody, PostParams } from './schemas';

export function registerContentRoutes(app: FastifyInstance, pool: Pool, guards: WriteGuards): void {
  app.post<{ Body: CreatePostBody }>(
    '/v1/posts',
    { schema: { body: CreatePostBody }, onRequest: guards.userWrite },
    async (request, reply) => {
      const authorId = await actingUser(request, pool);
      const { title, body } = request.body;
      const id = randomUUID();
      const createdAt = await withTransaction(pool, async (tx) => {
        const at = await insertPost(tx, { id, authorId, title, body });
        // Ordered under the author: the followers' feeds are derived from the author's activity.
        await new EventBatch(request.id)
          .add('post.published', { postId: id, authorId, title, excerpt: excerpt(body) }, authorId)
          .enqueue(tx);
        return at;
      });
      return reply.code(201).send({ id, authorId, title, body, createdAt });
    },
  );

  app.post<{ Params: PostParams; Body: CreateCommentBody }>(
    '/v1/posts/:postId/comments',
    { schema: { params: PostParams, body: CreateCommentBody }, onRequest: guards.userWrite },
    async (request, reply) => {
      const authorId = await actingUser(request, pool);
      const { postId } = request.params;
      const { body, parentCommentId } = request.body;
      const id = randomUUID();
      const result = await withTransaction(pool, async (tx) => {
        const postAuthorId = await postAuthor(tx, postId);
        if (postAuthorId === undefined) throw ERRORS.POST_NOT_FOUND(postId);
        let parentAuthorId: string | undefined;
        if (parentCommentId !== undefined) {
          parentAuthorId = await commentAuthor(tx, parentCommentId, postId);
          if (parentAuthorId === undefined) throw ERRORS.PARENT_COMMENT_NOT_FOUND(parentCommentId, postId);
        }
        const createdAt = await insertComment(tx, { id, postId, authorId, parentCommentId, body });
        const handles = parseHandles(body).slice(0, MAX_HANDLES);
        const mentionedUserIds = mentionedUsers(handles, await resolveHandles(tx, handles), authorId);
        const text = excerpt(body);
        const events = new EventBatch(request.id).add(
          'comment.created',
          { commentId: id, postId, postAuthorId, authorId, parentCommentId, parentAuthorId, excerpt: text },
          // The user this comment notifies: the author of the comment replied to, else of the post.
          parentAuthorId ?? postAuthorId,
        );
        for (const mentionedUserId of mentionedUserIds) {
          events.add(
            'user.mentioned',
            { commentId: id, postId, actorId: authorId, mentionedUserId, excerpt: text },
            mentionedUserId,
          );
        }
        await events.enqueue(tx);
        return { createdAt, mentionedUserIds };
      });
      return reply.code(201).send({ id, postId, authorId, parentCommentId: parentCommentId ?? null, body, ...result });
    },
  );

  app.post<{ Body: AddReactionBody }>(
    '/v1/reactions',
    { schema: { body: AddReactionBody }, onRequest: guards.userWrite },
    async (request, reply) => {
      const actorId = await actingUser(request, pool);
      const { targetType, targetId, emoji } = request.body;
      const result = await withTransaction(pool, async (tx) => {
        const targetAuthorId =
          targetType === 'post' ? await postAuthor(tx, targetId) : await commentAuthor(tx, targetId);
        if (targetAuthorId === undefined) throw ERRORS.TARGET_NOT_FOUND(targetType, targetId);
        const reaction = await addReaction(tx, { targetType, targetId, actorId, emoji });
        // The same reaction again: nothing changes, nobody is notified twice.
        if (reaction.created) {
          await new EventBatch(request.id)
            .add(
              'reaction.added',
              { reactionId: reaction.id, actorId, targetType, targetId, targetAuthorId, emoji },
              targetAuthorId,
            )
            .enqueue(tx);
        }
        return reaction;
      });
      const { created, ...reaction } = result;
      return reply.code(created ? 201 : 200).send({ ...reaction, actorId, targetType, targetId, emoji });
    },
  );
}
