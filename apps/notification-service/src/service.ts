import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { notificationHeaders, validateOrThrow } from '@community/contracts';
import { createPgPool } from '@community/db';
import type { Registry } from 'prom-client';
import type { Messaging, Topology } from '@community/messaging';
import {
  authSettingsFrom,
  brokerDetails,
  readinessState,
  type ReadinessState,
  serviceMessaging,
  databaseAnswers,
} from '@community/service';
import { createRelay, type OutboxRelay } from '@community/outbox';
import { buildApp } from './app';
import { SERVICE_NAME, type NotificationConfig } from './config';
import { createNotificationBatchHandler } from './handlers/notification-batch';
import { createEmitter } from './handlers/emit';
import { recipientKey } from './handlers/partition';
import { notificationMetrics, type NotificationMetrics } from './metrics';
import { BATCH_TIMEOUT_MS, CRITICAL_QUEUE, STANDARD_QUEUE } from './queues';
import { createInboxHub, type InboxHub } from './sse/hub';

export interface NotificationServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test passes one with short retry delays. */
  topology?: Topology;
  /**
   * Consume and relay (default true). False builds an HTTP + SSE replica without a broker: tests
   * of the HTTP API, or a second replica that only serves streams.
   */
  messaging?: boolean;
  /** The outbox relay's polling fallback when no NOTIFY arrives (the relay's default otherwise). */
  relayPollIntervalMs?: number;
  /** Notifications an SSE resume replays at most (the hub's default otherwise). */
  sseBacklogLimit?: number;
  /** The batch deadline (BATCH_TIMEOUT_MS); tests of the deadline itself use a short one. */
  batchTimeoutMs?: number;
  /** "Now" for quiet hours (notification.created `quietUntil`); tests fix it. Default: the system clock. */
  clock?: () => Date;
}

export interface NotificationService {
  app: FastifyInstance;
  /** Behind /readyz; runService flips it before stop(). */
  readiness: ReadinessState;
  pool: Pool;
  metrics: NotificationMetrics;
  hub: InboxHub;
  /** Undefined when built with `messaging: false`. */
  messaging?: Messaging;
  relay?: OutboxRelay;
  /** Connects: the LISTEN connection of the SSE hub, then the broker and the outbox relay. */
  start(): Promise<void>;
  /** Drains and closes what start() opened; app.close() then ends the HTTP server and the pool. */
  stop(): Promise<void>;
}

/**
 * The composition of the service: pool → messaging → consumers → relay → SSE hub → HTTP. Building
 * does no I/O; start() connects. main.ts adds the process lifecycle, the tests call it as is.
 */
export function createNotificationService(
  config: NotificationConfig,
  deps: NotificationServiceDeps,
): NotificationService {
  const { logger, registry } = deps;
  const metrics = notificationMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, {
    max: config.DATABASE_POOL_MAX,
    applicationName: SERVICE_NAME,
    logger,
  });

  let messaging: Messaging | undefined;
  let relay: OutboxRelay | undefined;
  if (deps.messaging !== false) {
    messaging = serviceMessaging(config, { service: SERVICE_NAME, topology: deps.topology, logger, registry });
    registerConsumers(messaging, config, pool, metrics, deps.batchTimeoutMs ?? BATCH_TIMEOUT_MS, deps.clock);
    relay = createRelay({
      pool,
      publisher: messaging.publisher,
      producer: SERVICE_NAME,
      logger,
      registry,
      databaseUrl: config.DATABASE_URL,
      pollIntervalMs: deps.relayPollIntervalMs,
      // The notification's type as a header: the critical email lane is bound on it (topology.ts).
      headers: notificationHeaders,
    });
  }
  const hub = createInboxHub({
    databaseUrl: config.DATABASE_URL,
    pool,
    logger,
    metrics,
    heartbeatMs: config.SSE_HEARTBEAT_MS,
    backlogLimit: deps.sseBacklogLimit,
    maxStreams: config.SSE_MAX_STREAMS,
    maxStreamsPerUser: config.SSE_MAX_STREAMS_PER_USER,
  });

  const readiness = readinessState();
  const app = buildApp({
    pool,
    logger,
    registry,
    metrics,
    hub,
    auth: authSettingsFrom(SERVICE_NAME, config),
    emailServiceVerifyKey: config.EMAIL_SERVICE_VERIFY_KEY,
    pushServiceVerifyKey: config.PUSH_SERVICE_VERIFY_KEY,
    readiness: async () => ({
      ...readiness.checks(),
      ...messaging?.readiness(),
      database: await databaseAnswers(pool),
      ...(relay ? { relay: relay.isHealthy() } : {}),
    }),
    readinessDetails: messaging ? () => brokerDetails(messaging?.blocked()) : undefined,
  });
  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());

  return {
    app,
    readiness,
    pool,
    metrics,
    hub,
    messaging,
    relay,
    async start() {
      await hub.start();
      await messaging?.start();
      await relay?.start();
    },
    async stop() {
      readiness.markShuttingDown();
      // Streams end first (clients reconnect to another replica and resume with Last-Event-ID).
      // The relay stops before messaging closes its publisher, so its last cycle still gets its
      // confirms. Rows that consumers commit while draining stay in the outbox: every replica's
      // relay publishes all of this producer's rows, and so does this one at its next start.
      await hub.stop();
      await relay?.stop();
      await messaging?.stop(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - 2000));
    },
  };
}

/**
 * Both queues run the same batch handler, each with its own inbox consumer name. They are
 * separate consumers on purpose: a backlog of follows and reactions on the standard queue never
 * sits in front of a mention or a security alert.
 */
function registerConsumers(
  messaging: Messaging,
  config: NotificationConfig,
  pool: Pool,
  metrics: NotificationMetrics,
  batchTimeoutMs: number,
  clock: (() => Date) | undefined,
): void {
  // notification.created goes out on the service's confirm publisher right after each batch's
  // commit (docs/NOTIFICATIONS.md "Emission"); the outbox relay below carries only what the
  // retraction and erasure transactions write (notification.withdrawn).
  const emit = createEmitter(messaging.publisher, config.FAULT_CRASH_AT);
  for (const queue of [CRITICAL_QUEUE, STANDARD_QUEUE]) {
    messaging.consume({
      queue,
      name: `${queue}:notifications`,
      timeoutMs: batchTimeoutMs,
      validate: validateOrThrow,
      batch: {
        size: config.CONSUMER_BATCH_SIZE,
        maxWaitMs: config.CONSUMER_BATCH_WAIT_MS,
        concurrency: config.CONSUMER_BATCH_CONCURRENCY,
        ...(config.CONSUMER_PARTITION_BY_USER ? { partitionKey: recipientKey } : {}),
        handle: createNotificationBatchHandler({ pool, consumer: queue, metrics, batchTimeoutMs, clock, emit }),
      },
    });
  }
}
