import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import { DLQ_ERRORS } from './errors';
import { FilterError, parseFilter, type DlqFilter } from './filter';
import type { DlqMetrics } from './metrics';
import { CONSOLE_HTML } from './page';
import { DEFAULT_RATE_PER_SECOND, MAX_RATE_PER_SECOND } from './replay';
import * as store from './store';
import type { DlqSummary } from './summary';

export interface RoutesDeps {
  pool: Pool;
  metrics: DlqMetrics;
  adminOnly: (request: FastifyRequest) => Promise<void>;
  summary: () => Promise<DlqSummary>;
  runReplay: (operationId: string, ratePerSecond: number) => void;
}

function filterOf(raw: unknown): DlqFilter {
  try {
    return parseFilter((raw ?? {}) as Record<string, unknown>);
  } catch (err) {
    if (err instanceof FilterError) throw DLQ_ERRORS.DLQ_INVALID_FILTER(err.message);
    throw err;
  }
}

const ID = /^\d{1,18}$/;

interface ActionBody {
  ids?: unknown;
  filter?: unknown;
  dryRun?: unknown;
  ratePerSecond?: unknown;
}

/** `{ ids }` or `{ filter }`, exactly one; a dry run unless `dryRun: false` is said explicitly. */
function selectionOf(body: ActionBody | undefined): { selection: store.Selection; dryRun: boolean } {
  if (!body || typeof body !== 'object') throw DLQ_ERRORS.DLQ_INVALID_SELECTION('the body must be a JSON object: { "filter": {…} } or { "ids": [...] }, with "dryRun"');
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw DLQ_ERRORS.DLQ_INVALID_SELECTION('dryRun must be true or false');
  const dryRun = body.dryRun !== false;
  if ((body.ids === undefined) === (body.filter === undefined)) {
    throw DLQ_ERRORS.DLQ_INVALID_SELECTION('give exactly one of "ids" (dead-letter ids) or "filter" (the list filter; {} is every pending message)');
  }
  if (body.ids !== undefined) {
    if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > 10_000) throw DLQ_ERRORS.DLQ_INVALID_SELECTION('ids must be a non-empty array of at most 10000 dead-letter ids');
    const ids = body.ids.map(String);
    const bad = ids.find((id) => !ID.test(id));
    if (bad) throw DLQ_ERRORS.DLQ_INVALID_SELECTION(`'${bad.slice(0, 40)}' is not a dead-letter id (digits)`);
    return { selection: { ids }, dryRun };
  }
  if (typeof body.filter !== 'object' || body.filter === null || Array.isArray(body.filter)) throw DLQ_ERRORS.DLQ_INVALID_FILTER('filter must be an object');
  return { selection: { filter: filterOf(body.filter) }, dryRun };
}

function rateOf(raw: unknown): number {
  if (raw === undefined) return DEFAULT_RATE_PER_SECOND;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > MAX_RATE_PER_SECOND) {
    throw DLQ_ERRORS.DLQ_INVALID_SELECTION(`ratePerSecond must be an integer from 1 to ${MAX_RATE_PER_SECOND}`);
  }
  return raw;
}

const who = (request: FastifyRequest): string => request.principal?.userId ?? 'unknown';

export function dlqRoutes(deps: RoutesDeps): FastifyPluginAsync {
  const { pool, metrics } = deps;
  return async (app) => {
    // The page holds no data: it asks for a token and calls the admin API below with it.
    app.get('/console', async (_request, reply) =>
      reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
        .header('cache-control', 'no-store')
        .send(CONSOLE_HTML),
    );

    await app.register(async (admin) => {
      admin.addHook('onRequest', deps.adminOnly);

      admin.get('/v1/admin/dlq', async () => deps.summary());

      admin.get('/v1/admin/dlq/groups', async (request) => {
        const query = request.query as Record<string, unknown>;
        const limit = Number(query.limit ?? 100);
        return { groups: await store.listGroups(pool, filterOf(query), Number.isFinite(limit) ? limit : 100) };
      });

      admin.get('/v1/admin/dlq/messages', async (request) => {
        const query = request.query as Record<string, unknown>;
        const limit = query.limit === undefined ? 50 : Number(query.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw DLQ_ERRORS.DLQ_INVALID_FILTER('limit must be an integer from 1 to 500');
        const cursor = query.cursor === undefined || query.cursor === '' ? undefined : String(query.cursor);
        if (cursor !== undefined && !ID.test(cursor)) throw DLQ_ERRORS.DLQ_INVALID_FILTER("cursor must be 'nextCursor' from a previous page");
        return store.listMessages(pool, filterOf(query), { limit, cursor });
      });

      admin.get('/v1/admin/dlq/messages/:id', async (request) => {
        const { id } = request.params as { id: string };
        const found = ID.test(id) ? await store.getMessage(pool, id) : null;
        if (!found) throw DLQ_ERRORS.DLQ_MESSAGE_NOT_FOUND(id);
        return found;
      });

      admin.get('/v1/admin/dlq/operations', async () => ({ operations: await store.listOperations(pool) }));

      admin.get('/v1/admin/dlq/operations/:id', async (request) => {
        const { id } = request.params as { id: string };
        const found = ID.test(id) ? await store.getOperation(pool, id) : null;
        if (!found) throw DLQ_ERRORS.DLQ_OPERATION_NOT_FOUND(id);
        return found;
      });

      admin.post('/v1/admin/dlq/replay', async (request, reply) => {
        const body = request.body as ActionBody | undefined;
        const { selection, dryRun } = selectionOf(body);
        const ratePerSecond = rateOf(body?.ratePerSecond);
        if (dryRun) return { dryRun: true, action: 'replay', ratePerSecond, ...(await store.preview(pool, selection)) };
        const op = await withTransaction(pool, (tx) => store.createOperation(tx, { action: 'replay', requestedBy: who(request), selection, ratePerSecond }));
        request.log.info({ operationId: op.id, matched: op.matched, by: who(request), selection }, 'dlq replay requested');
        if (op.matched > 0) deps.runReplay(op.id, ratePerSecond);
        return reply.code(202).send({ dryRun: false, operationId: op.id, matched: op.matched });
      });

      admin.post('/v1/admin/dlq/discard', async (request) => {
        const { selection, dryRun } = selectionOf(request.body as ActionBody | undefined);
        if (dryRun) return { dryRun: true, action: 'discard', ...(await store.preview(pool, selection)) };
        const result = await withTransaction(pool, async (tx) => {
          const op = await store.createOperation(tx, { action: 'discard', requestedBy: who(request), selection, ratePerSecond: null });
          const done = op.matched > 0 ? await store.discardItems(tx, op.id) : { discarded: 0, skipped: 0 };
          return { operationId: op.id, matched: op.matched, ...done };
        });
        if (result.discarded > 0) metrics.actions.inc({ action: 'discard', outcome: 'ok' }, result.discarded);
        if (result.skipped > 0) metrics.actions.inc({ action: 'discard', outcome: 'skipped' }, result.skipped);
        request.log.info({ ...result, by: who(request), selection }, 'dlq discard done');
        return { dryRun: false, ...result };
      });
    });
  };
}
