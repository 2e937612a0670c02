import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './deps';
import { LOST_WORK_KINDS, type LostWorkKind } from '../domain/lost-work';
import { checkLostWork, lostWorkSettings, redrive } from '../jobs/lost-work';
import { errorResponses } from '@community/service';
import { adminOnly } from './auth';
import { ERRORS } from './errors';
import { LostWorkBody, RedriveBody } from './schemas';

/** Rows re-driven per request at most (the answer says `more` and the operator continues from `newest`). */
const REDRIVE_LIMIT_MAX = 50_000;

/**
 * GET /v1/admin/lost-work: the lost-work check alone (the `lost-work` line of /v1/admin/status).
 * POST /v1/admin/lost-work/:kind/redrive: re-publish the due rows of one kind in [since, until) to
 * the queue that should hold them. A dry run unless `apply: true` (docs/RECONCILER.md "Lost work").
 */
export function registerLostWorkRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get(
    '/v1/admin/lost-work',
    {
      onRequest: adminOnly,
      schema: {
        tags: ['admin'],
        summary: 'The lost-work check: due rows of every kind against the messages their queues hold',
        response: { 200: LostWorkBody, ...errorResponses(401, 403) },
      },
    },
    async () => checkLostWork(deps.pool, deps.management, lostWorkSettings(deps.config), deps.clock()),
  );

  app.post<{
    Params: { kind: LostWorkKind };
    Body: { since: string; until?: string; apply?: boolean; limit?: number };
  }>(
    '/v1/admin/lost-work/:kind/redrive',
    {
      onRequest: adminOnly,
      schema: {
        tags: ['admin'],
        summary: 'Re-publishes the due rows of one kind in [since, until) (a dry run unless apply: true)',
        response: { 200: RedriveBody, ...errorResponses(400, 401, 403, 503) },
        params: {
          type: 'object',
          required: ['kind'],
          properties: { kind: { type: 'string', enum: [...LOST_WORK_KINDS] } },
        },
        body: {
          type: 'object',
          required: ['since'],
          properties: {
            since: { type: 'string', format: 'date-time' },
            until: { type: 'string', format: 'date-time' },
            apply: { type: 'boolean', default: false },
            limit: { type: 'integer', minimum: 1, maximum: REDRIVE_LIMIT_MAX, default: 10_000 },
          },
          additionalProperties: false,
        },
      },
    },
    async (req) => {
      const b = req.body;
      const since = new Date(b.since);
      const until = b.until ? new Date(b.until) : deps.clock();
      if (since >= until) throw ERRORS.REDRIVE_WINDOW(since.toISOString(), until.toISOString());
      const apply = b.apply === true;
      if (apply && !deps.publisher) throw ERRORS.REDRIVE_NO_MESSAGING();
      const result = await redrive(
        deps.pool,
        deps.publisher,
        req.params.kind,
        { since, until },
        { apply, limit: b.limit ?? 10_000 },
      );
      const operator = (req as unknown as { principal?: { userId: string } }).principal?.userId ?? 'admin';
      // The audit of a re-drive: who, what window, how many (the consumers' own ledgers record the effects).
      if (apply)
        req.log.warn(
          {
            operator,
            kind: result.kind,
            since: result.since,
            until: result.until,
            republished: result.republished,
            skipped: result.skipped.length,
            more: result.more,
          },
          'lost work re-driven',
        );
      return result;
    },
  );
}
