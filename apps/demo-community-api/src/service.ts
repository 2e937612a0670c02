import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { createPgPool, createScheduler, type Scheduler } from '@community/db';
import type { Messaging, Topology } from '@community/messaging';
import { type Logger } from '@community/observability';
import {
  authSettingsFrom,
  brokerDetails,
  readinessState,
  type ReadinessState,
  serviceMessaging,
  databaseAnswers,
} from '@community/service';
import { createRelay, type OutboxRelay } from '@community/outbox';
import type { Registry } from 'prom-client';
import { buildApp } from './app';
import { SERVICE_NAME, type DemoConfig } from './config';
import { answerOnce } from './http/answer-once';
import { requestKeysPurgeJob } from './jobs/purge-request-keys';
import { PRODUCER } from './store/outbox';
import { startTraffic, type Traffic } from './traffic/generator';

export interface DemoServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test adds a queue of its own. */
  topology?: Topology;
  /**
   * "Now" for the request keys' TTLs (producer-side dedup) and their purge. Tests set one to step
   * past a TTL without waiting; production leaves it unset: the database's now(), the clock every
   * replica shares.
   */
  clock?: () => Date;
}

export interface DemoService {
  app: FastifyInstance;
  /** Behind /readyz; runService flips it before stop(). */
  readiness: ReadinessState;
  pool: Pool;
  messaging: Messaging;
  relay: OutboxRelay;
  /** The purge of expired request keys (REQUEST_KEYS_PURGE_INTERVAL_MS); started by start(). */
  scheduler: Scheduler;
  /**
   * Connects to the broker, starts the outbox relay, then (DEMO_TRAFFIC_RATE > 0, off by default) the traffic
   * generator, which calls this very server: start() must run after the app listens.
   */
  start(): Promise<void>;
  /** Stops the traffic, the relay and the broker connection; app.close() then ends the HTTP server and the pool. */
  stop(): Promise<void>;
}

/**
 * The composition of the demo community API: pool → messaging (publisher only) → outbox relay →
 * the purge of expired request keys (scheduler) → HTTP. Writes do not need the broker (the outbox holds their events); the relay does. Building
 * does no I/O; start() connects. main.ts adds the process lifecycle, the tests call it as is.
 */
export function createDemoService(config: DemoConfig, deps: DemoServiceDeps): DemoService {
  const { logger, registry } = deps;
  const pool = createPgPool(config.DATABASE_URL, { max: 10, applicationName: SERVICE_NAME, logger });
  const messaging = serviceMessaging(config, { service: SERVICE_NAME, topology: deps.topology, logger, registry });
  const relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger,
    registry,
    databaseUrl: config.DATABASE_URL,
    pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    batchSize: config.OUTBOX_BATCH_SIZE,
  });
  const scheduler = createScheduler({
    pool,
    logger: logger.child({ component: 'scheduler' }),
    registry,
    jobs: [
      requestKeysPurgeJob({
        intervalMs: config.REQUEST_KEYS_PURGE_INTERVAL_MS,
        batchSize: config.REQUEST_KEYS_PURGE_BATCH_SIZE,
        clock: deps.clock,
      }),
    ],
  });
  const readiness = readinessState();
  const app = buildApp({
    pool,
    logger,
    registry,
    auth: authSettingsFrom(SERVICE_NAME, config),
    production: config.production,
    securityAlerts: { issuer: config.SECURITY_ALERTS_ISSUER, verifyKey: config.SECURITY_ALERTS_VERIFY_KEY },
    writeRateLimit: { max: config.DEMO_WRITE_RATE_LIMIT, windowMs: config.DEMO_WRITE_RATE_WINDOW_MS },
    answerOnce: answerOnce({
      pool,
      keyTtlMs: config.IDEMPOTENCY_KEY_TTL_MS,
      fingerprintTtlMs: config.REQUEST_FINGERPRINT_TTL_MS,
      clock: deps.clock,
    }),
    readiness: async () => ({
      ...readiness.checks(),
      database: await databaseAnswers(pool),
      amqp: messaging.readiness().amqp,
      relay: relay.isHealthy(),
    }),
    readinessDetails: () => brokerDetails(messaging.blocked()),
  });
  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());
  let traffic: Traffic | undefined;

  return {
    app,
    readiness,
    pool,
    messaging,
    relay,
    scheduler,
    async start() {
      await messaging.start();
      await relay.start();
      scheduler.start();
      if (config.DEMO_TRAFFIC_RATE > 0) {
        const { port } = app.server.address() as AddressInfo;
        traffic = startTraffic({
          baseUrl: `http://127.0.0.1:${port}`,
          rate: config.DEMO_TRAFFIC_RATE,
          logger: logger.child({ component: 'traffic' }),
        });
        logger.info(
          { rate: config.DEMO_TRAFFIC_RATE },
          'demo traffic started (DEMO_TRAFFIC_RATE=0, the default, turns it off)',
        );
      }
    },
    async stop() {
      readiness.markShuttingDown();
      // Traffic first (it calls this very server), then the relay finishes its cycle (confirms and
      // marks), then the broker connection closes.
      await traffic?.stop();
      await scheduler.stop();
      await relay.stop();
      await messaging.stop(5000);
    },
  };
}
