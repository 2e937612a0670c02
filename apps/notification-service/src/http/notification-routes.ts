import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { errorResponses } from '@community/service';
import type { NotificationMetrics } from '../metrics';
import { decodeCursor, listNotifications, readAll, setReadState, unreadCount } from '../store/inbox';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';
import { NotificationPage, ReadAllResult, ReadStateChanged, SeenVersionBody, UnreadCount } from './schemas';

const ItemParams = Type.Composite([UserParams, Type.Object({ id: Type.String({ format: 'uuid' }) })]);
const ListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  unreadOnly: Type.Boolean({ default: false }),
});

/**
 * Optional body of read / unread / read-all: `{ "version": n }`, the version the client saw (the
 * item's `version`, or the inbox `version` of a list or unread-count). Without it, the request
 * applies to the current state.
 */
function seenVersion(body: unknown): number | undefined {
  if (body === undefined || body === null || body === '') return undefined;
  if (typeof body !== 'object' || Array.isArray(body))
    throw ERRORS.INVALID_BODY('body must be a JSON object like { "version": 12 } or empty');
  const extra = Object.keys(body).find((k) => k !== 'version');
  if (extra !== undefined) throw ERRORS.INVALID_BODY(`unknown field '${extra}' in body (expected only 'version')`);
  const v = (body as { version?: unknown }).version;
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw ERRORS.INVALID_BODY('body/version must be a non-negative integer');
  return v;
}

const TAGS = ['notifications'];
/** The body of read / unread / read-all, for the document: checked by seenVersion (its own 400s), not by fastify. */
const seenVersionBody = {
  documentedBody: {
    schema: SeenVersionBody,
    required: false,
    description: 'optional: the version the client saw; without it, the request applies to the current state',
  },
};

export function registerNotificationRoutes(
  app: FastifyInstance,
  deps: { pool: Pool; metrics: NotificationMetrics; guards: InboxGuards },
): void {
  const { authorizeInbox } = deps.guards;
  const { pool, metrics } = deps;

  app.get<{ Params: Static<typeof UserParams>; Querystring: Static<typeof ListQuery> }>(
    '/v1/users/:userId/notifications',
    {
      onRequest: authorizeInbox,
      schema: {
        tags: TAGS,
        summary: "The user's in-app notifications, newest first",
        params: UserParams,
        querystring: ListQuery,
        response: { 200: NotificationPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { limit, cursor: cursorText, unreadOnly } = request.query;
      const cursor = cursorText === undefined ? undefined : decodeCursor(cursorText);
      if (cursorText !== undefined && !cursor) throw ERRORS.INVALID_CURSOR();
      return listNotifications(pool, request.params.userId, { limit, cursor, unreadOnly });
    },
  );

  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/notifications/unread-count',
    {
      onRequest: authorizeInbox,
      schema: {
        tags: TAGS,
        summary: 'The unread count and the inbox version',
        params: UserParams,
        response: { 200: UnreadCount, ...errorResponses(401, 403) },
      },
    },
    async (request) => unreadCount(pool, request.params.userId),
  );

  for (const [operation, read] of [
    ['read', true],
    ['unread', false],
  ] as const) {
    app.post<{ Params: Static<typeof ItemParams> }>(
      `/v1/users/:userId/notifications/:id/${operation}`,
      {
        onRequest: authorizeInbox,
        config: seenVersionBody,
        schema: {
          tags: TAGS,
          summary: `Marks one notification ${operation}`,
          params: ItemParams,
          response: { 200: ReadStateChanged, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => {
        const { userId, id } = request.params;
        const seen = seenVersion(request.body);
        const result = await setReadState(pool, userId, id, read, seen);
        metrics.readStateChanges.inc({ operation, outcome: result.status });
        if (result.status === 'not_found') throw ERRORS.NOTIFICATION_NOT_FOUND(id);
        if (result.status === 'stale') throw ERRORS.STALE_VERSION(id, seen ?? 0, result.item.version);
        return { notification: result.item, count: result.state.count, version: result.state.version };
      },
    );
  }

  app.post<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/notifications/read-all',
    {
      onRequest: authorizeInbox,
      config: seenVersionBody,
      schema: {
        tags: TAGS,
        summary: 'Marks read every notification up to the version seen (default: now)',
        params: UserParams,
        response: { 200: ReadAllResult, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const result = await readAll(pool, request.params.userId, seenVersion(request.body));
      metrics.readStateChanges.inc({ operation: 'read-all', outcome: result.marked > 0 ? 'changed' : 'unchanged' });
      return result;
    },
  );
}
