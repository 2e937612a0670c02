import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { classifyPgError, createPgPool } from '@community/db';
import { createMessaging } from '@community/messaging';
import { answers, createLogger, createRegistry, readinessState, runService } from '@community/observability';
import { createRelay } from '@community/outbox';
import { buildApp } from './app';
import { loadNotificationConfig } from './config';
import { registerConsumers } from './consumers';
import { notificationMetrics } from './metrics';
import { SERVICE_NAME } from './service-name';
import { createInboxHub } from './sse/hub';

/**
 * Composition root: config → logger → registry → pool → messaging → consumers → relay → SSE hub →
 * HTTP → runService. Nothing here is logic; each part is built where it is defined.
 */
async function main(): Promise<void> {
  const config = loadNotificationConfig();
  const logger = createLogger({ service: SERVICE_NAME, level: config.LOG_LEVEL });
  const registry = createRegistry({ service: SERVICE_NAME });
  const metrics = notificationMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, { max: config.DATABASE_POOL_MAX, applicationName: SERVICE_NAME, logger });

  const messaging = createMessaging({ url: config.AMQP_URL, service: SERVICE_NAME, topology: COMMUNITY_TOPOLOGY, logger, registry, classifiers: [classifyPgError] });
  registerConsumers(messaging, { pool, metrics }, {
    batchSize: config.CONSUMER_BATCH_SIZE,
    batchWaitMs: config.CONSUMER_BATCH_WAIT_MS,
    batchConcurrency: config.CONSUMER_BATCH_CONCURRENCY,
  });
  const relay = createRelay({ pool, publisher: messaging.publisher, producer: SERVICE_NAME, logger, registry, databaseUrl: config.DATABASE_URL });
  const hub = createInboxHub({ databaseUrl: config.DATABASE_URL, pool, logger, metrics, heartbeatMs: config.SSE_HEARTBEAT_MS });

  const state = readinessState();
  const app = await buildApp({
    pool,
    logger,
    registry,
    metrics,
    hub,
    jwtSecret: config.JWT_SECRET,
    readiness: async () => ({
      ...state.checks(),
      ...messaging.readiness(),
      database: await answers(() => pool.query('SELECT 1')),
      relay: relay.isHealthy(),
    }),
  });
  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());

  await runService({
    name: SERVICE_NAME,
    logger,
    app,
    port: config.PORT,
    readiness: state,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    start: async () => {
      await hub.start();
      await messaging.start();
      await relay.start();
    },
    stop: async () => {
      // Streams end first (clients reconnect to another replica and resume with Last-Event-ID).
      // The relay stops before messaging closes its publisher, so its last cycle still gets its
      // confirms. Rows that consumers commit while draining stay in the outbox: every replica's
      // relay publishes all of this producer's rows, and so does this one at its next start.
      await hub.stop();
      await relay.stop();
      await messaging.stop(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - 2000));
    },
  });
}

main();
