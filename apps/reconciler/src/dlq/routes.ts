import type { TSchema } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { Pool } from 'pg';
import { withTransaction } from '@community/db';
import { errorResponses, securityOf, textResponse } from '@community/service';
import { ERRORS } from '../http/errors';
import { FilterError, parseFilter, type DlqFilter } from './filter';
import type { DlqMetrics } from './metrics';
import { CONSOLE_CSP, CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS } from './page';
import { replayWarnings } from './permanence';
import { DEFAULT_RATE_PER_SECOND, MAX_RATE_PER_SECOND } from './replay';
import * as schemas from './route-schemas';
import * as store from './store';
import type { DlqSummary } from './summary';

export interface RoutesDeps {
  pool: Pool;
  metrics: DlqMetrics;
  adminOnly: (request: FastifyRequest) => Promise<void>;
  summary: () => Promise<DlqSummary>;
  runReplay: (operationId: string, ratePerSecond: number) => void;
  /** Messages one discard call may discard without `all: true` + `expectedCount` (default DISCARD_MAX_PER_CALL). */
  discardMaxPerCall?: number;
  /** How long a discard can be restored (default DEFAULT_RESTORE_WINDOW_MS: DLQ_RETENTION_DAYS' default). */
  restoreWindowMs?: number;
}

/**
 * One discard call discards at most this many messages, unless it says `all: true` with the count
 * it expects (the dry run's `matched`): a filter typed too wide, `{}` for instance (every pending
 * message), is refused instead of emptying every DLQ at once.
 */
export const DISCARD_MAX_PER_CALL = 1000;

function filterOf(raw: unknown): DlqFilter {
  try {
    return parseFilter((raw ?? {}) as Record<string, unknown>);
  } catch (err) {
    if (err instanceof FilterError) throw ERRORS.DLQ_INVALID_FILTER(err.message);
    throw err;
  }
}

const ID = /^\d{1,18}$/;

interface ActionBody {
  ids?: unknown;
  filter?: unknown;
  dryRun?: unknown;
  ratePerSecond?: unknown;
  all?: unknown;
  expectedCount?: unknown;
}

/** A discard's confirmation of a bulk beyond the bound: `all: true` and the count it expects. */
function bulkOf(body: ActionBody | undefined): { all: boolean; expectedCount?: number } {
  if (body?.all !== undefined && typeof body.all !== 'boolean')
    throw ERRORS.DLQ_INVALID_SELECTION('all must be true or false');
  const all = body?.all === true;
  if (!all) return { all };
  const n = body?.expectedCount;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw ERRORS.DLQ_INVALID_SELECTION('"all": true needs "expectedCount": the number of messages the dry run matched');
  return { all, expectedCount: n };
}

/** `{ ids }` or `{ filter }`, exactly one; a dry run unless `dryRun: false` is said explicitly. */
function selectionOf(body: ActionBody | undefined): { selection: store.Selection; dryRun: boolean } {
  if (!body || typeof body !== 'object')
    throw ERRORS.DLQ_INVALID_SELECTION(
      'the body must be a JSON object: { "filter": {…} } or { "ids": [...] }, with "dryRun"',
    );
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean')
    throw ERRORS.DLQ_INVALID_SELECTION('dryRun must be true or false');
  const dryRun = body.dryRun !== false;
  if ((body.ids === undefined) === (body.filter === undefined)) {
    throw ERRORS.DLQ_INVALID_SELECTION(
      'give exactly one of "ids" (dead-letter ids) or "filter" (the list filter; {} is every pending message)',
    );
  }
  if (body.ids !== undefined) {
    if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > 10_000)
      throw ERRORS.DLQ_INVALID_SELECTION('ids must be a non-empty array of at most 10000 dead-letter ids');
    const ids = body.ids.map(String);
    const bad = ids.find((id) => !ID.test(id));
    if (bad) throw ERRORS.DLQ_INVALID_SELECTION(`'${bad.slice(0, 40)}' is not a dead-letter id (digits)`);
    return { selection: { ids }, dryRun };
  }
  if (typeof body.filter !== 'object' || body.filter === null || Array.isArray(body.filter))
    throw ERRORS.DLQ_INVALID_FILTER('filter must be an object');
  return { selection: { filter: filterOf(body.filter) }, dryRun };
}

function rateOf(raw: unknown): number {
  if (raw === undefined) return DEFAULT_RATE_PER_SECOND;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > MAX_RATE_PER_SECOND) {
    throw ERRORS.DLQ_INVALID_SELECTION(`ratePerSecond must be an integer from 1 to ${MAX_RATE_PER_SECOND}`);
  }
  return raw;
}

const who = (request: FastifyRequest): string => request.principal?.userId ?? 'unknown';

export function dlqRoutes(deps: RoutesDeps): FastifyPluginAsync {
  const { pool, metrics } = deps;
  const maxPerCall = deps.discardMaxPerCall ?? DISCARD_MAX_PER_CALL;
  const restoreWindowMs = deps.restoreWindowMs ?? store.DEFAULT_RESTORE_WINDOW_MS;
  return async (app) => {
    // The page holds no data: it asks for a token and calls the admin API below with it. Its script
    // and styles are files of their own, so the policy needs no 'unsafe-inline' (page.ts).
    const asset = (type: string, text: string) => async (_request: FastifyRequest, reply: FastifyReply) =>
      reply
        .header('content-type', type)
        .header('content-security-policy', CONSOLE_CSP)
        .header('x-content-type-options', 'nosniff')
        // frame-ancestors 'none' for current browsers, X-Frame-Options for older ones.
        .header('x-frame-options', 'DENY')
        .header('cache-control', 'no-store')
        .send(text);
    const page = (mediaType: string, summary: string) => ({
      schema: { tags: ['dlq'], summary, response: { 200: textResponse(mediaType, summary), ...errorResponses() } },
    });
    app.get(
      '/console',
      page('text/html', 'The DLQ console (asks for an admin token)'),
      asset('text/html; charset=utf-8', CONSOLE_HTML),
    );
    app.get(
      '/console/console.js',
      page('text/javascript', "The console's script"),
      asset('text/javascript; charset=utf-8', CONSOLE_JS),
    );
    app.get(
      '/console/console.css',
      page('text/css', "The console's styles"),
      asset('text/css; charset=utf-8', CONSOLE_CSS),
    );

    await app.register(async (admin) => {
      admin.addHook('onRequest', deps.adminOnly);
      // The guard is the scope's hook, which the document cannot see on a route: each route says it.
      const security = securityOf(deps.adminOnly);
      const route = (
        summary: string,
        response: Record<string, unknown>,
        description?: string,
      ): RouteShorthandOptions => ({
        schema: {
          tags: ['dlq'],
          summary,
          ...(description ? { description } : {}),
          ...(security ? { security } : {}),
          response: { ...response, ...errorResponses(400, 401, 403) },
        },
      });
      // The bodies of replay, discard and restore are checked by selectionOf (their own coded 400s).
      const action = (
        summary: string,
        response: Record<string, unknown>,
        body: TSchema = schemas.SelectionBody,
      ): RouteShorthandOptions => ({
        ...route(summary, response),
        config: { documentedBody: { schema: body } },
      });

      // signedInAs: the operator the reconciler verified the token as (the page shows it; an
      // operator's admin token carries no sub, its kid names the operator).
      admin.get(
        '/v1/admin/dlq',
        route('Every DLQ: pending counts, top causes, the `dlq` check', { 200: schemas.SummaryBody }),
        async (request) => ({ ...(await deps.summary()), signedInAs: who(request) }),
      );

      admin.get(
        '/v1/admin/dlq/groups',
        route('Pending dead letters grouped by cause (fingerprint)', { 200: schemas.GroupsBody }, schemas.FILTER_QUERY),
        async (request) => {
          const query = request.query as Record<string, unknown>;
          const limit = Number(query.limit ?? 100);
          return { groups: await store.listGroups(pool, filterOf(query), Number.isFinite(limit) ? limit : 100) };
        },
      );

      admin.get(
        '/v1/admin/dlq/messages',
        route('Dead letters matching the filter, newest first', { 200: schemas.MessagesBody }, schemas.FILTER_QUERY),
        async (request) => {
          const query = request.query as Record<string, unknown>;
          const limit = query.limit === undefined ? 50 : Number(query.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 500)
            throw ERRORS.DLQ_INVALID_FILTER('limit must be an integer from 1 to 500');
          const cursor = query.cursor === undefined || query.cursor === '' ? undefined : String(query.cursor);
          if (cursor !== undefined && !ID.test(cursor))
            throw ERRORS.DLQ_INVALID_FILTER("cursor must be 'nextCursor' from a previous page");
          return store.listMessages(pool, filterOf(query), { limit, cursor });
        },
      );

      admin.get(
        '/v1/admin/dlq/messages/:id',
        route('One dead letter: body, headers, history', {
          200: schemas.OpenBody('the dead letter'),
          404: errorResponses(404)['404'],
        }),
        async (request) => {
          const { id } = request.params as { id: string };
          const found = ID.test(id) ? await store.getMessage(pool, id, restoreWindowMs) : null;
          if (!found) throw ERRORS.DLQ_MESSAGE_NOT_FOUND(id);
          return found;
        },
      );

      admin.get(
        '/v1/admin/dlq/operations',
        route('The latest replay, discard and restore operations', { 200: schemas.OperationsBody }),
        async () => ({ operations: await store.listOperations(pool) }),
      );

      admin.get(
        '/v1/admin/dlq/operations/:id',
        route('One operation with its progress', {
          200: schemas.OpenBody('the operation'),
          404: errorResponses(404)['404'],
        }),
        async (request) => {
          const { id } = request.params as { id: string };
          const found = ID.test(id) ? await store.getOperation(pool, id) : null;
          if (!found) throw ERRORS.DLQ_OPERATION_NOT_FOUND(id);
          return found;
        },
      );

      admin.post(
        '/v1/admin/dlq/replay',
        action(
          'Replays the selection to its original queues (a dry run unless dryRun: false)',
          {
            200: schemas.PreviewBody('The dry run: what would be replayed, and the causes a replay does not remove'),
            202: schemas.OperationStartedBody,
          },
          schemas.ReplayBody,
        ),
        async (request, reply) => {
          const body = request.body as ActionBody | undefined;
          const { selection, dryRun } = selectionOf(body);
          const ratePerSecond = rateOf(body?.ratePerSecond);
          if (dryRun) {
            // The causes a replay does not remove, said before anything is sent (permanence.ts).
            const [p, permanent] = await Promise.all([
              store.preview(pool, selection),
              store.permanentCauses(pool, selection),
            ]);
            return { dryRun: true, action: 'replay', ratePerSecond, ...p, warnings: replayWarnings(permanent) };
          }
          const op = await withTransaction(pool, (tx) =>
            store.createOperation(tx, { action: 'replay', requestedBy: who(request), selection, ratePerSecond }),
          );
          request.log.info(
            { operationId: op.id, matched: op.matched, by: who(request), selection },
            'dlq replay requested',
          );
          if (op.matched > 0) deps.runReplay(op.id, ratePerSecond);
          return reply.code(202).send({ dryRun: false, operationId: op.id, matched: op.matched });
        },
      );

      admin.post(
        '/v1/admin/dlq/discard',
        action(
          'Discards the selection (restorable within the restore window; a dry run unless dryRun: false)',
          {
            200: schemas.ActionBody('The dry run, or what was discarded'),
            409: errorResponses(409)['409'],
          },
          schemas.DiscardBody,
        ),
        async (request) => {
          const body = request.body as ActionBody | undefined;
          const { selection, dryRun } = selectionOf(body);
          const bulk = bulkOf(body);
          if (dryRun) {
            const p = await store.preview(pool, selection, 'discard');
            return { dryRun: true, action: 'discard', maxPerCall, needsAll: p.matched > maxPerCall, ...p };
          }
          const result = await withTransaction(pool, async (tx) => {
            const op = await store.createOperation(tx, {
              action: 'discard',
              requestedBy: who(request),
              selection,
              ratePerSecond: null,
            });
            // Counted on the operation's fixed items; throwing rolls the operation back with them.
            if (bulk.all && bulk.expectedCount !== op.matched)
              throw ERRORS.DLQ_DISCARD_COUNT_CHANGED(bulk.expectedCount ?? 0, op.matched);
            if (!bulk.all && op.matched > maxPerCall) throw ERRORS.DLQ_DISCARD_TOO_MANY(op.matched, maxPerCall);
            const done = op.matched > 0 ? await store.discardItems(tx, op.id) : { discarded: 0, skipped: 0 };
            return { operationId: op.id, matched: op.matched, ...done };
          });
          if (result.discarded > 0) metrics.actions.inc({ action: 'discard', outcome: 'ok' }, result.discarded);
          if (result.skipped > 0) metrics.actions.inc({ action: 'discard', outcome: 'skipped' }, result.skipped);
          request.log.info({ ...result, by: who(request), selection, all: bulk.all }, 'dlq discard done');
          return { dryRun: false, ...result, restorableUntil: new Date(Date.now() + restoreWindowMs).toISOString() };
        },
      );

      // The undo of a discard, within the restore window (docs/DLQ-CONSOLE.md "Discard"): the
      // messages go back to pending, audited like every action.
      admin.post(
        '/v1/admin/dlq/restore',
        action('Restores discarded dead letters to pending (a dry run unless dryRun: false)', {
          200: schemas.ActionBody('The dry run, or what was restored'),
        }),
        async (request) => {
          const { selection, dryRun } = selectionOf(request.body as ActionBody | undefined);
          if (dryRun)
            return {
              dryRun: true,
              action: 'restore',
              restoreWindowMs,
              ...(await store.preview(pool, selection, 'restore', restoreWindowMs)),
            };
          const result = await withTransaction(pool, async (tx) => {
            const op = await store.createOperation(tx, {
              action: 'restore',
              requestedBy: who(request),
              selection,
              ratePerSecond: null,
              restoreWindowMs,
            });
            const done =
              op.matched > 0 ? await store.restoreItems(tx, op.id, restoreWindowMs) : { restored: 0, skipped: 0 };
            return { operationId: op.id, matched: op.matched, ...done };
          });
          if (result.restored > 0) metrics.actions.inc({ action: 'restore', outcome: 'ok' }, result.restored);
          if (result.skipped > 0) metrics.actions.inc({ action: 'restore', outcome: 'skipped' }, result.skipped);
          request.log.info({ ...result, by: who(request), selection }, 'dlq restore done');
          return { dryRun: false, ...result };
        },
      );
    });
  };
}
