import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { excerpt, MAX_HANDLES, mentionedUsers, parseHandles } from '../domain/mentions';
import { addReaction, commentAuthor, insertComment, insertPost, postAuthor } from '../store/content';
import { EventBatch } from '../store/outbox';
import { resolveHandles } from '../store/users';
import type { WriteRouteDeps } from './write-guards';
import { actingUser } from './actor';
import { ERRORS } from './errors';
import {
  AddReactionBody,
  COMMENT_RESPONSES,
  CreateCommentBody,
  CreatePostBody,
  POST_RESPONSES,
  PostParams,
  REACTION_RESPONSES,
  WriteHeaders,
  writeErrors,
} from './schemas';

export function registerContentRoutes(app: FastifyInstance, { pool, guards, answerOnce }: WriteRouteDeps): void {
  app.post<{ Body: CreatePostBody }>(
    '/v1/posts',
    {
      schema: {
        tags: ['posts'],
        summary: 'Publish a post (post.published)',
        headers: WriteHeaders,
        body: CreatePostBody,
        response: { ...POST_RESPONSES, ...writeErrors() },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const authorId = await actingUser(request, pool);
      const { title, body } = request.body;
      return answerOnce(request, reply, async (tx) => {
        const id = randomUUID();
        const createdAt = await insertPost(tx, { id, authorId, title, body });
        // Ordered under the author: the followers' feeds are derived from the author's activity.
        await new EventBatch(request.id)
          .add('post.published', { postId: id, authorId, title, excerpt: excerpt(body) }, authorId)
          .enqueue(tx);
        return { status: 201, body: { id, authorId, title, body, createdAt } };
      });
    },
  );

  app.post<{ Params: PostParams; Body: CreateCommentBody }>(
    '/v1/posts/:postId/comments',
    {
      schema: {
        tags: ['posts'],
        summary: 'Comment on a post or reply to a comment (comment.created, user.mentioned per mention)',
        headers: WriteHeaders,
        params: PostParams,
        body: CreateCommentBody,
        response: { ...COMMENT_RESPONSES, ...writeErrors(404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const authorId = await actingUser(request, pool);
      const { postId } = request.params;
      const { body, parentCommentId } = request.body;
      return answerOnce(request, reply, async (tx) => {
        const id = randomUUID();
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
        return {
          status: 201,
          body: { id, postId, authorId, parentCommentId: parentCommentId ?? null, body, createdAt, mentionedUserIds },
        };
      });
    },
  );

  app.post<{ Body: AddReactionBody }>(
    '/v1/reactions',
    {
      schema: {
        tags: ['reactions'],
        summary: 'React to a post or a comment (reaction.added for a new reaction)',
        headers: WriteHeaders,
        body: AddReactionBody,
        response: { ...REACTION_RESPONSES, ...writeErrors(404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const actorId = await actingUser(request, pool);
      const { targetType, targetId, emoji } = request.body;
      return answerOnce(request, reply, async (tx) => {
        const targetAuthorId =
          targetType === 'post' ? await postAuthor(tx, targetId) : await commentAuthor(tx, targetId);
        if (targetAuthorId === undefined) throw ERRORS.TARGET_NOT_FOUND(targetType, targetId);
        const { created, ...reaction } = await addReaction(tx, { targetType, targetId, actorId, emoji });
        // The same reaction again: nothing changes, nobody is notified twice.
        if (created) {
          await new EventBatch(request.id)
            .add(
              'reaction.added',
              { reactionId: reaction.id, actorId, targetType, targetId, targetAuthorId, emoji },
              targetAuthorId,
            )
            .enqueue(tx);
        }
        return { status: created ? 201 : 200, body: { ...reaction, actorId, targetType, targetId, emoji } };
      });
    },
  );
}
