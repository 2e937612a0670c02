import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { dlqName, managementTargetFor, type Topology } from '@community/messaging';
import { createIngest } from './ingest';
import { dlqMetrics } from './metrics';
import { createReplayer } from './replay';
import { dlqRoutes } from './routes';
import { buildSummary, type DlqSummary } from './summary';

export type { DlqSummary } from './summary';
export type { DlqFilter } from './filter';

export interface DlqConsoleDeps {
  pool: Pool;
  /** AMQP_URL (its vhost is the one read). */
  amqpUrl: string;
  /** RABBITMQ_MANAGEMENT_URL; default http://<amqp host>:15672 with the AMQP credentials. */
  managementUrl?: string;
  topology: Topology;
  logger: Logger;
  registry: Registry;
  /** `authGuards({ prefix: 'RC_', resource: 'data' }).adminOnly`. */
  adminOnly: (request: FastifyRequest) => Promise<void>;
  /** The AMQP connection name prefix (default `reconciler`). */
  service?: string;
  /** Pending dead letters tolerated before the `dlq` status check fails (default 0). */
  statusThreshold?: number;
  /** Tests: how often a missing DLQ is looked for, how fast a stale replay is taken over. */
  ingestRetryMs?: number;
  replayStaleMs?: number;
  replaySweepMs?: number;
  /** How long a discard can be undone: DLQ_RETENTION_DAYS (the retention job purges discarded rows then). Default 30 days. */
  restoreWindowMs?: number;
  /** Messages one discard call may discard without `all` + `expectedCount` (default 1000). */
  discardMaxPerCall?: number;
}

export interface DlqConsole {
  /** Register on the reconciler's app: `app.register(dlq.routes)`. Serves /console and /v1/admin/dlq/*. */
  routes: FastifyPluginAsync;
  /** Starts reading every DLQ of the topology into Postgres and resumes orphaned replays. */
  start(): Promise<void>;
  /** Stops reading; a replay in progress stops between two messages and is resumed by the next start. */
  stop(): Promise<void>;
  summary(): Promise<DlqSummary>;
}

/** The DLQ console (docs/DLQ-CONSOLE.md). Building it opens nothing; `start()` connects. */
export function createDlqConsole(deps: DlqConsoleDeps): DlqConsole {
  const logger = deps.logger.child({ component: 'dlq' });
  const service = deps.service ?? 'reconciler';
  const dlqs = deps.topology.queues.map((q) => ({ dlq: dlqName(q.name), originalQueue: q.name }));
  const metrics = dlqMetrics(
    deps.registry,
    deps.pool,
    dlqs.map((d) => d.dlq),
    (err) => logger.warn({ err }, 'dlq metrics: reading the summary failed'),
  );
  const ingest = createIngest({
    url: deps.amqpUrl,
    connectionName: `${service} dlq-ingest`,
    pool: deps.pool,
    dlqs: dlqs.map((d) => d.dlq),
    logger,
    metrics,
    retryMs: deps.ingestRetryMs,
  });
  const replayer = createReplayer({
    url: deps.amqpUrl,
    connectionName: `${service} dlq-replay`,
    pool: deps.pool,
    workQueues: new Set(deps.topology.queues.map((q) => q.name)),
    logger,
    metrics,
    staleMs: deps.replayStaleMs,
    sweepMs: deps.replaySweepMs,
  });
  const management = managementTargetFor(deps.amqpUrl, deps.managementUrl);
  const summary = () =>
    buildSummary({
      pool: deps.pool,
      management,
      dlqs,
      consuming: ingest.consuming,
      logger,
      threshold: deps.statusThreshold,
    });

  return {
    routes: dlqRoutes({
      pool: deps.pool,
      metrics,
      adminOnly: deps.adminOnly,
      summary,
      runReplay: (id, rate) => void replayer.run(id, rate),
      restoreWindowMs: deps.restoreWindowMs,
      discardMaxPerCall: deps.discardMaxPerCall,
    }),
    async start() {
      await ingest.start();
      replayer.start();
    },
    async stop() {
      await replayer.stop();
      await ingest.stop();
    },
    summary,
  };
}
