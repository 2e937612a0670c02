import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  COMMUNITY_TOPOLOGY,
  QUEUES,
  RECONCILER_LOW_PRIORITY_QUEUE,
  validateOrThrow,
  type EventOf,
} from '@community/contracts';
import { createPgPool, createScheduler, type ScheduledJob, type Scheduler } from '@community/db';
import { managementTargetFor, type ManagementTarget, type Messaging, type Topology } from '@community/messaging';
import { createRelay, type OutboxRelay } from '@community/outbox';
import {
  authSettingsFrom,
  readinessState,
  type ReadinessState,
  serviceMessaging,
  databaseAnswers,
} from '@community/service';
import { buildApp } from './app';
import { SERVICE_NAME, type ReconcilerConfig } from './config';
import { createDlqConsole, type DlqConsole } from './dlq';
import { parseRecountRequest } from './domain/requests';
import { recountRangeHandler } from './handlers/recount';
import { accountDeletedHandler } from './handlers/account-deleted';
import { adminOnly } from './http/auth';
import { createFeedCache, type FeedCache } from '@community/feed-service';
import { counterJobs } from './jobs/counters';
import { createFeedChecker, type FeedChecker } from './jobs/feeds';
import { instrument } from './jobs/instrument';
import { retentionJobs } from './jobs/retention';
import { stuckWorkJob } from './jobs/stuck';
import { createWatchdog, type Watchdog } from './jobs/watchdog';
import { lostWorkSettings } from './jobs/lost-work';
import { reconcilerMetrics, type ReconcilerMetrics } from './metrics';

export interface ReconcilerServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test passes one with short retry delays or fewer queues. */
  topology?: Topology;
  clock?: () => Date;
  /** Run the scheduled jobs' loops (default: config.SCHEDULER). Tests run jobs with runOnce. */
  runScheduler?: boolean;
  /** Connect to the broker and consume reconciler.low-priority (default true). */
  messaging?: boolean;
  /** Run the DLQ console (ingest of every DLQ, replay, discard; default: with messaging). */
  dlqConsole?: boolean;
}

export interface ReconcilerService {
  app: FastifyInstance;
  readiness: ReadinessState;
  pool: Pool;
  metrics: ReconcilerMetrics;
  scheduler: Scheduler;
  /** Every scheduled job, by name, with its interval. */
  jobs: readonly ScheduledJob[];
  watchdog: Watchdog;
  messaging?: Messaging;
  /** The DLQ console (apps/reconciler/src/dlq, docs/DLQ-CONSOLE.md); undefined without messaging. */
  dlq?: DlqConsole;
  management: ManagementTarget;
  /** feed-service's Redis (its prefix: FEED_REDIS_PREFIX) and the checks and rebuilds of its feeds. */
  feedCache: FeedCache;
  feeds: FeedChecker;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The composition of the reconciler: pool → jobs → scheduler → messaging (its low-priority queue)
 * → HTTP. Building does no I/O; start() connects and starts the loops.
 */
export function createReconcilerService(config: ReconcilerConfig, deps: ReconcilerServiceDeps): ReconcilerService {
  const { logger, registry } = deps;
  const clock = deps.clock ?? (() => new Date());
  const topology = deps.topology ?? COMMUNITY_TOPOLOGY;
  const metrics = reconcilerMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, {
    max: config.DATABASE_POOL_MAX,
    applicationName: SERVICE_NAME,
    logger,
  });
  const management = managementTargetFor(config.AMQP_URL, config.RABBITMQ_MANAGEMENT_URL || undefined);
  const workQueues = topology.queues.map((q) => q.name);

  const feedCache = createFeedCache({
    url: config.REDIS_URL,
    prefix: config.FEED_REDIS_PREFIX,
    cap: config.FEED_CAP,
    feedTtlMs: config.FEED_ACTIVE_WINDOW_DAYS * 86_400_000,
    logger: logger.child({ component: 'feed-cache' }),
    metrics: { redisErrors: metrics.feedRedisErrors },
  });
  const feeds = createFeedChecker({
    pool,
    cache: feedCache,
    cap: config.FEED_CAP,
    settleMs: config.FEED_CHECK_SETTLE_MS,
    sample: config.FEED_CHECK_SAMPLE,
    metrics,
    logger: logger.child({ component: 'feeds' }),
    clock,
  });
  let messaging: Messaging | undefined;
  let relay: OutboxRelay | undefined;
  if (deps.messaging !== false) {
    messaging = serviceMessaging(config, {
      service: SERVICE_NAME,
      topology,
      logger,
      registry,
    });
    // The reconciler's own outbox (user.erased, behind its audit row: store/erasures.ts).
    relay = createRelay({
      pool,
      publisher: messaging.publisher,
      producer: SERVICE_NAME,
      logger,
      registry,
      databaseUrl: config.DATABASE_URL,
    });
  }

  const watchdog = createWatchdog({
    target: management,
    workQueues,
    samples: config.WATCHDOG_SAMPLES,
    intervalMs: config.WATCHDOG_INTERVAL_MS,
    metrics,
    logger: logger.child({ component: 'watchdog' }),
    lostWork: lostWorkSettings(config),
    clock,
  });
  const jobs: ScheduledJob[] = [
    ...counterJobs({
      metrics,
      batchSize: config.COUNTER_BATCH_SIZE,
      recentIntervalMs: config.COUNTER_RECOUNT_INTERVAL_MS,
      recentWindowMs: config.COUNTER_RECENT_WINDOW_MS,
      sweepIntervalMs: config.COUNTER_SWEEP_INTERVAL_MS,
    }),
    ...retentionJobs(config),
    stuckWorkJob({
      intervalMs: config.STUCK_INTERVAL_MS,
      outboxAfterMs: config.STUCK_OUTBOX_AFTER_MS,
      leaseGraceMs: config.STUCK_LEASE_GRACE_MS,
      fanoutAfterMs: config.STUCK_FANOUT_AFTER_MS,
      metrics,
      logger,
      publisher: messaging?.publisher,
      clock,
    }),
    feeds.job(config.FEED_CHECK_INTERVAL_MS),
    watchdog.job,
  ].map((job) => instrument(job, metrics));
  const scheduler = createScheduler({ pool, logger: logger.child({ component: 'scheduler' }), registry, jobs });

  if (messaging) {
    // One batch at a time: an operator's full recount never holds more than one batch of counter locks.
    messaging.consume({
      queue: RECONCILER_LOW_PRIORITY_QUEUE,
      name: `${RECONCILER_LOW_PRIORITY_QUEUE}:recount`,
      prefetch: 1,
      concurrency: 1,
      timeoutMs: 120_000,
      validate: parseRecountRequest,
      handle: recountRangeHandler({ pool, metrics, batchSize: config.COUNTER_BATCH_SIZE }),
    });
    // Account deletions become erasures (the same audit and user.erased as `ops user erase`).
    messaging.consume<EventOf<'user.deleted'>>({
      queue: QUEUES.reconcilerAccountDeletions,
      name: `${QUEUES.reconcilerAccountDeletions}:erase`,
      prefetch: 4,
      concurrency: 2,
      timeoutMs: 30_000,
      validate: (body) => validateOrThrow(body) as EventOf<'user.deleted'>,
      handle: accountDeletedHandler({ pool, producer: SERVICE_NAME }),
    });
  }

  const dlq =
    deps.messaging !== false && deps.dlqConsole !== false
      ? createDlqConsole({
          statusThreshold: config.STATUS_DLQ_MAX,
          pool,
          amqpUrl: config.AMQP_URL,
          managementUrl: config.RABBITMQ_MANAGEMENT_URL || undefined,
          topology,
          logger,
          registry,
          adminOnly,
          service: SERVICE_NAME,
          restoreWindowMs: config.DLQ_RETENTION_DAYS * 86_400_000,
        })
      : undefined;

  const readiness = readinessState();
  const startedAt = clock();
  const app = buildApp({
    pool,
    logger,
    registry,
    metrics,
    config,
    auth: authSettingsFrom(SERVICE_NAME, config),
    scheduler,
    jobs,
    watchdog,
    management,
    workQueues,
    startedAt,
    clock,
    publisher: messaging?.publisher,
    dlqRoutes: dlq?.routes,
    feeds,
    readiness: async () => ({
      ...readiness.checks(),
      ...messaging?.readiness(),
      database: await databaseAnswers(pool),
      ...(relay ? { relay: relay.isHealthy() } : {}),
    }),
  });
  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());

  const runScheduler = deps.runScheduler ?? config.SCHEDULER;
  return {
    app,
    readiness,
    pool,
    metrics,
    scheduler,
    jobs,
    watchdog,
    messaging,
    dlq,
    management,
    feedCache,
    feeds,
    async start() {
      await feedCache.connect();
      await messaging?.start();
      await relay?.start();
      await dlq?.start();
      if (runScheduler) scheduler.start();
    },
    async stop() {
      readiness.markShuttingDown();
      await scheduler.stop();
      await dlq?.stop();
      // Before messaging closes its publisher: the relay's last cycle still gets its confirms.
      await relay?.stop();
      await messaging?.stop(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - 2000));
      await feedCache.close();
    },
  };
}
