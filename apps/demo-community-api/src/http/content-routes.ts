import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { excerpt, MAX_HANDLES, mentionedUsers, parseHandles } from '../domain/mentions';
import {
  addReaction,
  commentAuthor,
  commentOf,
  deleteCommentThread,
  deletePost,
  insertComment,
  insertPost,
  postAuthor,
  removeReaction,
} from '../store/content';
import { EventBatch } from '../store/outbox';
import { resolveHandles } from '../store/users';
import type { WriteRouteDeps } from './write-guards';
import { actingUser } from './actor';
import { ERRORS } from './errors';
import {
  AddReactionBody,
  COMMENT_RESPONSES,
  CommentParams,
  CreateCommentBody,
  DELETE_COMMENT_RESPONSES,
  DELETE_POST_RESPONSES,
  DELETE_REACTION_RESPONSES,
  CreatePostBody,
  POST_RESPONSES,
  PostParams,
  REACTION_RESPONSES,
  ReactionParams,
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
        // A comment's post goes into reaction.added, so that deleting the post withdraws it too.
        const comment = targetType === 'comment' ? await commentOf(tx, targetId) : undefined;
        const targetAuthorId = targetType === 'post' ? await postAuthor(tx, targetId) : comment?.authorId;
        if (targetAuthorId === undefined) throw ERRORS.TARGET_NOT_FOUND(targetType, targetId);
        const { created, ...reaction } = await addReaction(tx, { targetType, targetId, actorId, emoji });
        // The same reaction again: nothing changes, nobody is notified twice.
        if (created) {
          await new EventBatch(request.id)
            .add(
              'reaction.added',
              {
                reactionId: reaction.id,
                actorId,
                targetType,
                targetId,
                targetAuthorId,
                emoji,
                ...(comment ? { postId: comment.postId } : {}),
              },
              targetAuthorId,
            )
            .enqueue(tx);
        }
        return { status: created ? 201 : 200, body: { ...reaction, actorId, targetType, targetId, emoji } };
      });
    },
  );

  // Deletions (docs/CONTRACT.md "Retraction"): each withdraws the notifications and feed entries its
  // content caused, through its event. Only the author deletes; a second DELETE finds nothing (404),
  // a retry with the same Idempotency-Key (or within the fingerprint's TTL) gets the first answer.
  app.delete<{ Params: PostParams }>(
    '/v1/posts/:postId',
    {
      schema: {
        tags: ['posts'],
        summary: 'Delete a post with its comments and reactions (post.deleted)',
        headers: WriteHeaders,
        params: PostParams,
        response: { ...DELETE_POST_RESPONSES, ...writeErrors(403, 404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const actorId = await actingUser(request, pool);
      const { postId } = request.params;
      return answerOnce(request, reply, async (tx) => {
        const author = await postAuthor(tx, postId);
        if (author === undefined) throw ERRORS.POST_NOT_FOUND(postId);
        if (author !== actorId) throw ERRORS.DELETE_FORBIDDEN(actorId, `post "${postId}"`);
        const deleted = await deletePost(tx, postId);
        if (!deleted) throw ERRORS.POST_NOT_FOUND(postId); // deleted by a concurrent request meanwhile
        // Under the author, as post.published: the followers' feeds see the post go after it came.
        await new EventBatch(request.id).add('post.deleted', { postId, authorId: author }, author).enqueue(tx);
        return {
          status: 200,
          body: { id: postId, deleted: true, comments: deleted.comments, reactions: deleted.reactions },
        };
      });
    },
  );

  app.delete<{ Params: CommentParams }>(
    '/v1/comments/:commentId',
    {
      schema: {
        tags: ['posts'],
        summary: 'Delete a comment with the replies under it (comment.deleted for each)',
        headers: WriteHeaders,
        params: CommentParams,
        response: { ...DELETE_COMMENT_RESPONSES, ...writeErrors(403, 404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const actorId = await actingUser(request, pool);
      const { commentId } = request.params;
      return answerOnce(request, reply, async (tx) => {
        const comment = await commentOf(tx, commentId);
        if (!comment) throw ERRORS.COMMENT_NOT_FOUND(commentId);
        if (comment.authorId !== actorId) throw ERRORS.DELETE_FORBIDDEN(actorId, `comment "${commentId}"`);
        const deleted = await deleteCommentThread(tx, commentId);
        if (!deleted.length) throw ERRORS.COMMENT_NOT_FOUND(commentId);
        const events = new EventBatch(request.id);
        // Each under the user its comment.created was ordered under, so it follows the creation.
        for (const c of deleted)
          events.add(
            'comment.deleted',
            { commentId: c.commentId, postId: c.postId, authorId: c.authorId },
            c.notifiedId,
          );
        await events.enqueue(tx);
        return {
          status: 200,
          body: { id: commentId, postId: comment.postId, deleted: true, commentIds: deleted.map((c) => c.commentId) },
        };
      });
    },
  );

  app.delete<{ Params: ReactionParams }>(
    '/v1/reactions/:reactionId',
    {
      schema: {
        tags: ['reactions'],
        summary: 'Take a reaction back (reaction.removed)',
        headers: WriteHeaders,
        params: ReactionParams,
        response: { ...DELETE_REACTION_RESPONSES, ...writeErrors(403, 404) },
      },
      onRequest: guards.userWrite,
    },
    async (request, reply) => {
      const actorId = await actingUser(request, pool);
      const { reactionId } = request.params;
      return answerOnce(request, reply, async (tx) => {
        const { rows } = await tx.query<{ actor_id: string }>(
          'SELECT actor_id FROM community_reactions WHERE id = $1',
          [reactionId],
        );
        if (!rows[0]) throw ERRORS.REACTION_NOT_FOUND(reactionId);
        if (rows[0].actor_id !== actorId) throw ERRORS.DELETE_FORBIDDEN(actorId, `reaction "${reactionId}"`);
        const removed = await removeReaction(tx, reactionId);
        if (!removed) throw ERRORS.REACTION_NOT_FOUND(reactionId);
        const { targetType, targetId, emoji } = removed;
        const targetAuthorId =
          targetType === 'post' ? await postAuthor(tx, targetId) : await commentAuthor(tx, targetId);
        await new EventBatch(request.id)
          .add(
            'reaction.removed',
            { reactionId, actorId, targetType, targetId },
            // As reaction.added; the target may be gone already (its own deletion withdrew the reaction).
            targetAuthorId ?? actorId,
          )
          .enqueue(tx);
        return { status: 200, body: { id: reactionId, actorId, targetType, targetId, emoji, deleted: true } };
      });
    },
  );
}
