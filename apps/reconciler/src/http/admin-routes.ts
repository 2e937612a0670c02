import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { EVENTS_EXCHANGE } from '@community/contracts';
import type { AppDeps } from './deps';
import { evaluateStatus } from '../domain/status';
import { planRanges, recountRequest } from '../domain/requests';
import { lastRecount, recount } from '../jobs/counters';
import { breakerUrls, readFlowControl } from '../clients/breakers';
import { sampleQueues } from '../clients/broker';
import { lastJobRuns } from '@community/db';
import { counterBatchBoundaries, type Drift } from '@community/notification-service';
import { checkLostWork, lostWorkSettings } from '../jobs/lost-work';
import { findDeadHolderLeases } from '@community/email-service';
import { findStuckWork } from '../store/stuck';
import { errorResponses } from '@community/service';
import { adminOnly } from './auth';
import { ERRORS, STORABLE_ID } from './errors';
import { FeedRebuildBody, JobRunBody, JobsBody, RecountInlineBody, RecountQueuedBody, StatusBody } from './schemas';

const TAGS = ['admin'];

const DRIFTS_SHOWN = 100;

/** Builds the status checklist from live facts (docs/RECONCILER.md "Status"). Exported for the ops CLI's tests. */
export async function collectStatus(deps: AppDeps) {
  const { config } = deps;
  const [queues, stuck, recountRow, runs, flow, deadHolderLeases] = await Promise.all([
    sampleQueues(deps.management).catch((err: Error) => ({ error: err.message })),
    findStuckWork(deps.pool, {
      outboxAfterMs: config.STUCK_OUTBOX_AFTER_MS,
      leaseGraceMs: config.STUCK_LEASE_GRACE_MS,
      fanoutAfterMs: config.STUCK_FANOUT_AFTER_MS,
    }),
    lastRecount(deps.pool),
    lastJobRuns(
      deps.pool,
      deps.jobs.map((j) => j.name),
    ),
    readFlowControl(breakerUrls(config.BREAKER_METRICS_URLS)).catch((err: Error) => ({ error: err.message })),
    findDeadHolderLeases(deps.pool),
  ]);
  const breakers = 'error' in flow ? flow : flow.breakers;
  // After the others: its own sample comes before its row counts (domain/lost-work.ts).
  const lostWork = await checkLostWork(deps.pool, deps.management, lostWorkSettings(config), deps.clock());
  return evaluateStatus({
    now: deps.clock(),
    startedAt: deps.startedAt,
    workQueues: deps.workQueues,
    queues,
    watchdog: deps.watchdog.current(),
    stuck,
    lastRecount: recountRow,
    lastRuns: runs,
    jobIntervalsMs: Object.fromEntries(deps.jobs.map((j) => [j.name, j.intervalMs])),
    breakers,
    rateLimits: 'error' in flow ? undefined : flow.rateLimits,
    deadHolderLeases,
    lostWork,
    thresholds: {
      fanoutAfterMs: config.STUCK_FANOUT_AFTER_MS,
      backlogMax: config.STATUS_BACKLOG_MAX,
      oldestMessageMaxMs: config.STATUS_OLDEST_MESSAGE_MAX_MS,
      outboxLagMaxMs: config.STATUS_OUTBOX_LAG_MAX_MS,
      drainEtaMaxMs: config.STATUS_DRAIN_ETA_MAX_MS,
    },
  });
}

export function registerAdminRoutes(app: FastifyInstance, deps: AppDeps): void {
  const guard = { onRequest: adminOnly };

  app.get(
    '/v1/admin/status',
    {
      ...guard,
      schema: {
        tags: TAGS,
        summary: 'The status checklist (the lines of `ops status`)',
        response: { 200: StatusBody, ...errorResponses(401, 403) },
      },
    },
    async () => collectStatus(deps),
  );

  const jobsSchema = {
    tags: TAGS,
    summary: 'Every scheduled job with its interval and last run',
    response: { 200: JobsBody, ...errorResponses(401, 403) },
  };
  app.get('/v1/admin/jobs', { ...guard, schema: jobsSchema }, async () => {
    const runs = await lastJobRuns(
      deps.pool,
      deps.jobs.map((j) => j.name),
    );
    return {
      jobs: deps.jobs.map((j) => {
        const r = runs.find((x) => x.job === j.name);
        return {
          job: j.name,
          intervalMs: j.intervalMs,
          lastRun: r
            ? {
                runId: r.runId,
                holder: r.holder,
                outcome: r.outcome,
                startedAt: r.startedAt.toISOString(),
                finishedAt: r.finishedAt?.toISOString() ?? null,
                durationMs: r.durationMs,
                counts: r.counts,
                error: r.error,
              }
            : null,
        };
      }),
    };
  });

  app.post<{ Params: { job: string }; Querystring: { dryRun?: boolean } }>(
    '/v1/admin/jobs/:job/run',
    {
      ...guard,
      schema: {
        tags: TAGS,
        summary: 'Runs a job now (under its lock; a dry run changes nothing)',
        response: { 200: JobRunBody, ...errorResponses(401, 403, 404, 409) },
        params: { type: 'object', properties: { job: { type: 'string' } } },
        querystring: {
          type: 'object',
          properties: { dryRun: { type: 'boolean', default: false } },
          additionalProperties: false,
        },
      },
    },
    async (req) => {
      const { job } = req.params;
      if (!deps.jobs.some((j) => j.name === job))
        throw ERRORS.UNKNOWN_JOB(job, deps.jobs.map((j) => j.name).join(', '));
      // Forced (no due check) but under the job's lock: never two runs at once across replicas.
      const attempt = await deps.scheduler.runOnce(job, { force: true, dryRun: req.query.dryRun === true });
      if (attempt.status === 'skipped') {
        if (attempt.reason === 'locked') throw ERRORS.JOB_BUSY(job);
        throw attempt.error ?? new Error(`job ${job} was not run (${attempt.reason})`);
      }
      return {
        job,
        runId: attempt.runId,
        outcome: attempt.outcome,
        dryRun: req.query.dryRun === true,
        counts: attempt.counts,
        error: attempt.error?.message ?? null,
      };
    },
  );

  app.post<{ Body: { userId?: string; dryRun?: boolean } }>(
    '/v1/admin/recount',
    {
      ...guard,
      schema: {
        tags: TAGS,
        summary:
          'Recounts unread counters: one user or a dry run here and now, everyone through the low-priority queue',
        response: {
          200: RecountInlineBody,
          202: RecountQueuedBody,
          ...errorResponses(400, 401, 403),
        },
        body: {
          type: 'object',
          properties: { userId: { ...STORABLE_ID, maxLength: 200 }, dryRun: { type: 'boolean', default: false } },
          additionalProperties: false,
        },
      },
    },
    async (req, reply) => {
      const body = req.body ?? {};
      const dryRun = body.dryRun === true;
      const principal = (req as unknown as { principal?: { userId: string } }).principal;
      const requestedBy = principal?.userId ?? 'admin';
      // One user, or a dry run of everyone: here and now, under the same locks as the jobs.
      if (body.userId !== undefined || dryRun || !deps.publisher) {
        const drifts: Drift[] = [];
        const summary = await recount(deps.pool, deps.metrics, {
          batchSize: deps.config.COUNTER_BATCH_SIZE,
          userIds: body.userId !== undefined ? [body.userId] : undefined,
          dryRun,
          source: `api:${requestedBy}`,
          onDrift: (d) => drifts.length < DRIFTS_SHOWN && drifts.push(d),
        });
        return { mode: 'inline', dryRun, ...summary, drifts };
      }
      // Everyone, for real: one message per batch on reconciler.low-priority, worked one at a time.
      const ranges = planRanges(await counterBatchBoundaries(deps.pool, deps.config.COUNTER_BATCH_SIZE));
      const correlationId = randomUUID();
      for (const range of ranges) {
        await deps.publisher.publish(recountRequest(range, requestedBy, correlationId, deps.clock()), {
          exchange: EVENTS_EXCHANGE,
        });
      }
      return reply.code(202).send({ mode: 'queued', dryRun: false, batches: ranges.length, correlationId });
    },
  );

  app.post<{ Body: { userId?: string; all?: boolean; dryRun?: boolean } }>(
    '/v1/admin/feeds/rebuild',
    {
      ...guard,
      schema: {
        tags: TAGS,
        summary: "Checks one user's feed, or every active one, against the projections and rebuilds what differs",
        response: { 200: FeedRebuildBody, ...errorResponses(400, 401, 403) },
        body: {
          type: 'object',
          properties: {
            userId: { ...STORABLE_ID, maxLength: 256 },
            all: { type: 'boolean', const: true },
            dryRun: { type: 'boolean', default: false },
          },
          additionalProperties: false,
        },
      },
    },
    async (req) => {
      const body = req.body ?? {};
      if ((body.userId === undefined) === (body.all !== true)) throw ERRORS.FEED_TARGET_REQUIRED();
      const dryRun = body.dryRun === true;
      const result = await deps.feeds.rebuild({ userId: body.userId, all: body.all, dryRun });
      return { dryRun, ...(body.userId !== undefined ? { userId: body.userId } : { all: true }), ...result };
    },
  );
}
