import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { NotificationMetrics } from '../metrics';
import { decodeCursor, listNotifications, readAll, setReadState, unreadCount } from '../store/inbox';
import type { InboxGuards } from './auth';
import { ERRORS } from './errors';
import { UserParams } from './params';

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

export function registerNotificationRoutes(
  app: FastifyInstance,
  deps: { pool: Pool; metrics: NotificationMetrics; guards: InboxGuards },
): void {
  const { authorizeInbox } = deps.guards;
  const { pool, metrics } = deps;

  app.get<{ Params: Static<typeof UserParams>; Querystring: Static<typeof ListQuery> }>(
    '/v1/users/:userId/notifications',
    { onRequest: authorizeInbox, schema: { params: UserParams, querystring: ListQuery } },
    async (request) => {
      const { limit, cursor: cursorText, unreadOnly } = request.query;
      const cursor = cursorText === undefined ? undefined : decodeCursor(cursorText);
      if (cursorText !== undefined && !cursor) throw ERRORS.INVALID_CURSOR();
      return listNotifications(pool, request.params.userId, { limit, cursor, unreadOnly });
    },
  );

  app.get<{ Params: Static<typeof UserParams> }>(
    '/v1/users/:userId/notifications/unread-count',
    { onRequest: authorizeInbox, schema: { params: UserParams } },
    async (request) => unreadCount(pool, request.params.userId),
  );

  for (const [operation, read] of [
    ['read', true],
    ['unread', false],
  ] as const) {
    app.post<{ Params: Static<typeof ItemParams> }>(
      `/v1/users/:userId/notifications/:id/${operation}`,
      { onRequest: authorizeInbox, schema: { params: ItemParams } },
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
    { onRequest: authorizeInbox, schema: { params: UserParams } },
    async (request) => {
      const result = await readAll(pool, request.params.userId, seenVersion(request.body));
      metrics.readStateChanges.inc({ operation: 'read-all', outcome: result.marked > 0 ? 'changed' : 'unchanged' });
      return result;
    },
  );
}
