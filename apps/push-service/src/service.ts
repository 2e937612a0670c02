import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { QUEUES, type EventOf } from '@community/contracts';
import { createPgPool } from '@community/db';
import type { Consumer, Messaging, Topology } from '@community/messaging';
import {
  authSettingsFrom,
  brokerDetails,
  databaseAnswers,
  readinessState,
  type ReadinessState,
  ReadStateClient,
  serviceMessaging,
} from '@community/service';
import { buildApp } from './app';
import { SERVICE_NAME, type PushConfig } from './config';
import type { DeliverDeps } from './delivery/deliver';
import { Poller } from './delivery/poller';
import { createSender, type PushSender } from './delivery/sender';
import { notificationCreatedHandler } from './handlers/notification-created';
import { notificationWithdrawnHandler } from './handlers/notification-withdrawn';
import { only } from './handlers/only';
import { userErasedHandler } from './handlers/user-erased';
import { pushMetrics, type PushMetrics } from './metrics';

const SEND_QUEUE = QUEUES.pushSend;
const DAY_MS = 86_400_000;

export interface PushServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test passes one with short retry delays. */
  topology?: Topology;
  /** "Now" for the age guard, the holds, the retry times and what is due; injectable for tests. */
  clock?: () => Date;
  /** Run the poller loop (tests may call `poller.poll()` by hand). Default true. */
  runPoller?: boolean;
}

export interface PushService {
  app: FastifyInstance;
  /** Behind /readyz; runService flips it before stop(). */
  readiness: ReadinessState;
  messaging: Messaging;
  sendConsumer: Consumer;
  /** The loop that sends what is due (retries, crashed senders' rows) and purges old rows. */
  poller: Poller;
  sender: PushSender;
  metrics: PushMetrics;
  pool: Pool;
  /** Connects to the broker and starts consuming, then the poller. */
  start(): Promise<void>;
  /** Drains the consumer, stops the poller; app.close() then ends the HTTP server and the pool. */
  stop(): Promise<void>;
}

/**
 * The composition of the service: pool → sender (web-push + fetch) → messaging → the consumer of
 * push-service.send → poller → HTTP. Building does no I/O; start() connects.
 */
export function createPushService(config: PushConfig, deps: PushServiceDeps): PushService {
  const { logger, registry } = deps;
  const clock = deps.clock ?? (() => new Date());
  const metrics = pushMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, {
    max: Math.min(20, config.PUSH_CONSUMER_CONCURRENCY + 4),
    applicationName: SERVICE_NAME,
    logger,
  });
  const sender = createSender(
    { subject: config.VAPID_SUBJECT, publicKey: config.VAPID_PUBLIC_KEY, privateKey: config.VAPID_PRIVATE_KEY },
    config.PUSH_REQUEST_TIMEOUT_MS,
  );
  const deliverDeps: DeliverDeps = {
    pool,
    sender,
    metrics,
    logger: logger.child({ component: 'deliver' }),
    maxAttempts: config.PUSH_MAX_ATTEMPTS,
    now: clock,
  };

  const messaging = serviceMessaging(config, { service: SERVICE_NAME, topology: deps.topology, logger, registry });
  const created = notificationCreatedHandler({
    pool,
    metrics,
    deliver: deliverDeps,
    leaseMs: config.PUSH_LEASE_MS,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    // A day's margin below retention: a row purged at PUSH_RETENTION_DAYS must not be re-pushed.
    maxEventAgeMs: (config.PUSH_RETENTION_DAYS - 1) * DAY_MS,
    readCheckDelayMs: config.PUSH_READ_CHECK_DELAY_MS,
    now: clock,
  });
  const withdrawn = notificationWithdrawnHandler(pool);
  const erased = userErasedHandler(pool, SEND_QUEUE);
  type SendQueueEvent = EventOf<'notification.created'> | EventOf<'notification.withdrawn'> | EventOf<'user.erased'>;
  const sendConsumer = messaging.consume<SendQueueEvent>({
    queue: SEND_QUEUE,
    name: 'send-push',
    prefetch: config.PUSH_CONSUMER_CONCURRENCY,
    concurrency: config.PUSH_CONSUMER_CONCURRENCY,
    // The inline sends of one notification (one request per subscription, in parallel) and the commits.
    timeoutMs: config.PUSH_REQUEST_TIMEOUT_MS + 10_000,
    validate: only('notification.created', 'notification.withdrawn', 'user.erased'),
    handle: (event, ctx) => {
      switch (event.type) {
        case 'notification.withdrawn':
          return withdrawn(event, ctx);
        case 'user.erased':
          return erased(event, ctx);
        default:
          return created(event, ctx);
      }
    },
  });

  // Delay-then-check (docs/PUSH.md "Quiet hours and delay-then-check"): asks notification-service.
  const readState =
    config.PUSH_READ_CHECK_DELAY_MS > 0
      ? new ReadStateClient({
          baseUrl: config.NOTIFICATION_SERVICE_URL,
          signingKey: config.PUSH_SERVICE_SIGNING_KEY,
          issuer: SERVICE_NAME,
          timeoutMs: config.PUSH_READ_CHECK_TIMEOUT_MS,
        })
      : undefined;
  const poller = new Poller({
    readState,
    deliver: deliverDeps,
    intervalMs: config.PUSH_POLL_INTERVAL_MS,
    leaseMs: config.PUSH_LEASE_MS,
    batchSize: config.PUSH_BATCH_SIZE,
    retentionDays: config.PUSH_RETENTION_DAYS,
    logger: logger.child({ component: 'poller' }),
  });

  const readiness = readinessState();
  const app = buildApp({
    logger,
    registry,
    auth: authSettingsFrom(SERVICE_NAME, config),
    readiness: async () => ({ ...readiness.checks(), ...messaging.readiness(), database: await databaseAnswers(pool) }),
    readinessDetails: () => ({ ...brokerDetails(messaging.blocked()) }),
    pool,
    metrics,
    rules: { allowInsecureLocalhost: config.PUSH_ALLOW_INSECURE_LOCALHOST },
    maxPerUser: config.PUSH_MAX_SUBSCRIPTIONS_PER_USER,
    vapidPublicKey: config.VAPID_PUBLIC_KEY,
  });
  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());

  return {
    app,
    readiness,
    messaging,
    sendConsumer,
    poller,
    sender,
    metrics,
    pool,
    async start() {
      await messaging.start();
      if (deps.runPoller !== false) poller.start();
    },
    async stop() {
      readiness.markShuttingDown();
      await messaging.stop(config.SHUTDOWN_TIMEOUT_MS);
      await poller.stop();
    },
  };
}
