import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '@community/service';
import { decodeCursor, encodeCursor } from '../domain/cursor';
import type { FeedReader } from '../read/feed-reader';
import { authorizeFeed } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

const FeedQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
});

const FeedItem = Type.Object({
  postId: Type.String(),
  authorId: Type.String(),
  title: Type.String(),
  excerpt: Type.String(),
  publishedAt: Type.String({ format: 'date-time' }),
});

/** What the feed answers: a field missing here would be dropped from every answer (fastify serialises from it). */
const FeedPage = Type.Object({
  items: Type.Array(FeedItem, { description: 'newest first' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'opaque; null on the last page' }),
});

/** GET /v1/users/:userId/feed (docs/CONTRACT.md "HTTP contract"): `{ items, nextCursor }`, newest first. */
export function registerFeedRoutes(app: FastifyInstance, deps: { reader: FeedReader }): void {
  app.get<{ Params: Static<typeof UserParams>; Querystring: Static<typeof FeedQuery> }>(
    '/v1/users/:userId/feed',
    {
      onRequest: authorizeFeed,
      schema: {
        tags: ['feed'],
        summary:
          'The posts of the authors the user follows, newest first (header x-feed-source: hit, miss or fallback)',
        params: UserParams,
        querystring: FeedQuery,
        response: { 200: FeedPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { limit, cursor: cursorText } = request.query;
      const cursor = cursorText === undefined ? undefined : decodeCursor(cursorText);
      if (cursorText !== undefined && !cursor) throw ERRORS.INVALID_CURSOR();
      const page = await deps.reader.read(request.params.userId, cursor, limit);
      // Which path answered (hit, miss, fallback): for operators and tests; the body is the same.
      reply.header('x-feed-source', page.result);
      const last = page.items.at(-1);
      return {
        items: page.items.map(({ postId, authorId, title, excerpt, publishedAt }) => ({
          postId,
          authorId,
          title,
          excerpt,
          publishedAt,
        })),
        nextCursor: page.items.length === limit && last ? encodeCursor(last) : null,
      };
    },
  );
}
