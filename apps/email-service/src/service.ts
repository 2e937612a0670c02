import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { QUEUES, type EventOf } from '@community/contracts';
import { createPgPool } from '@community/db';
import type { Consumer, Messaging, Topology } from '@community/messaging';
import {
  brokerDetails,
  databaseAnswers,
  readinessState,
  ReadStateClient,
  type ReadinessState,
  serviceMessaging,
} from '@community/service';
import { buildApp } from './app';
import { legacyTokensUntil, SERVICE_NAME, type EmailConfig } from './config';
import { createComposer } from './delivery/compose';
import { sendDueHeld, type HeldDeps } from './delivery/held';
import { HolderHeartbeat } from './delivery/holder';
import { flushDueWindows, sendDueDigests, type DigestJobDeps } from './digest/digest-jobs';
import { Ticker } from './digest/ticker';
import { criticalLaneOnly } from './handlers/critical-lane';
import { only } from './handlers/only';
import { notificationCreatedHandler } from './handlers/notification-created';
import { notificationWithdrawnHandler } from './handlers/notification-withdrawn';
import { userErasedHandler } from './handlers/user-erased';
import { userUpsertedHandler } from './handlers/user-upserted';
import { emailMetrics } from './metrics';
import { emailRetentionPolicy, refuseExpiredEvents, sendHandlerTimeoutMs } from './retention';
import { recordRetentionHorizon } from './store/horizon';
import { classifySmtpError } from './smtp/classify';
import { smtpFlowControl } from './smtp/flow-control';
import { pauseLanesWhileOpen } from './smtp/pause-lanes';
import type { SmtpProviders } from './smtp/providers';
import { createSmtpStack } from './smtp/stack';
import { PreferencesClient } from './unsubscribe/preferences-client';
import { syncDueSuppressions } from './unsubscribe/sync';
import { UnsubscribeTokens } from './unsubscribe/token';

const SEND_QUEUE = QUEUES.emailSend;
const CRITICAL_SEND_QUEUE = QUEUES.emailSendCritical;
const USERS_QUEUE = QUEUES.emailUsers;
/** Most of the critical lane's messages are other email, acked at once: fetch them in bulk. */
const CRITICAL_LANE_PREFETCH = 200;

export interface EmailServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test passes one with short retry delays. */
  topology?: Topology;
  /** "Now" for digest windows and the user grace period; injectable for tests. */
  clock?: () => Date;
  /**
   * The SMTP rate limiter's clock (ms, monotonic); performance.now() unless a test drives it, so
   * that it can count the permits each interval grants instead of timing emails.
   */
  rateLimitClock?: () => number;
  /** Run the digest/opt-out ticker loop (tests drive `ticker.tick()` by hand). Default true. */
  runTicker?: boolean;
}

export interface EmailService {
  app: FastifyInstance;
  /** Behind /readyz; runService flips it before stop(). */
  readiness: ReadinessState;
  messaging: Messaging;
  /** The SMTP providers as one breaker (open while every provider's is), each provider's within. */
  breaker: SmtpProviders;
  /** This process as a lease holder: its id and heartbeat (delivery/holder.ts). */
  heartbeat: HolderHeartbeat;
  /** The digest / opt-out loop every replica runs (digest/ticker.ts). */
  ticker: Ticker;
  sendConsumer: Consumer;
  /** The critical lane (security alerts) on email-service.send-critical. */
  criticalConsumer: Consumer;
  pool: Pool;
  digestJobs: DigestJobDeps;
  /** Connects to the broker and starts consuming, then the ticker. */
  start(): Promise<void>;
  /** Drains the consumers and closes what start() opened; app.close() then ends the HTTP server and the pool. */
  stop(): Promise<void>;
}

/**
 * The composition of the service: pool → SMTP (transport, breaker, limiter, sender) → messaging →
 * consumers → ticker → HTTP. Building does no I/O; start() connects. main.ts adds the process
 * lifecycle, the tests and the benchmark call it as is.
 */
export function createEmailService(config: EmailConfig, deps: EmailServiceDeps): EmailService {
  const { logger, registry } = deps;
  const clock = deps.clock ?? (() => new Date());
  const metrics = emailMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, {
    max: Math.min(20, config.EMAIL_CONSUMER_CONCURRENCY + 4),
    applicationName: SERVICE_NAME,
    logger,
  });

  const { breaker, sender } = createSmtpStack(config, { logger, metrics, rateLimitClock: deps.rateLimitClock });
  // Signed with UNSUBSCRIBE_TOKEN_SECRET; JWT_SECRET only verifies links from before they expired.
  const tokens = new UnsubscribeTokens(config.UNSUBSCRIBE_TOKEN_SECRET, {
    ttlMs: config.UNSUBSCRIBE_TOKEN_TTL_DAYS * 86_400_000,
    now: clock,
    legacy:
      config.JWT_SECRET === undefined ? undefined : { jwtSecret: config.JWT_SECRET, until: legacyTokensUntil(config) },
  });
  const composer = createComposer(config, tokens);

  const messaging = serviceMessaging(config, {
    service: SERVICE_NAME,
    topology: deps.topology,
    logger,
    registry,
    classifiers: [classifySmtpError],
  });
  const heartbeat = new HolderHeartbeat({
    pool,
    intervalMs: config.EMAIL_HEARTBEAT_INTERVAL_MS,
    deadAfterMs: config.EMAIL_HOLDER_DEAD_AFTER_MS,
    logger: logger.child({ component: 'lease-holder' }),
    metrics,
  });
  // A claim binds each attempt to a provider; a digest claim leaves rows bound to a provider that
  // cannot send now (store/ledger.ts).
  const holder = {
    ...heartbeat.holder,
    usable: () => breaker.usable(),
    preferred: () => breaker.preferred(),
  };
  const handlerDeps = {
    pool,
    sender,
    breaker,
    composer,
    metrics,
    logger,
    leaseMs: config.EMAIL_LEASE_MS,
    holder,
    breakerMaxHoldMs: config.SMTP_BREAKER_MAX_HOLD_MS,
    userGraceMs: config.USER_ADDRESS_GRACE_MS,
    readCheckDelayMs: config.EMAIL_READ_CHECK_DELAY_MS,
    digestPeriod: config.DIGEST_PERIOD,
    digestLocalHour: config.DIGEST_LOCAL_HOUR,
    now: clock,
  };
  const handleNotification = notificationCreatedHandler(handlerDeps);
  const handleWithdrawn = notificationWithdrawnHandler(pool);
  type SendQueueEvent = EventOf<'notification.created'> | EventOf<'notification.withdrawn'>;
  // Before anything can send: an event past the acceptance window may have lost its ledger row.
  const maxEventAgeMs = emailRetentionPolicy(config).maxEventAgeMs;
  const refuseExpired = refuseExpiredEvents<SendQueueEvent>(maxEventAgeMs, clock);
  const sendConsumer = messaging.consume<SendQueueEvent>({
    queue: SEND_QUEUE,
    name: 'send-email',
    prefetch: config.EMAIL_CONSUMER_CONCURRENCY,
    concurrency: config.EMAIL_CONSUMER_CONCURRENCY,
    timeoutMs: sendHandlerTimeoutMs(config),
    validate: only('notification.created', 'notification.withdrawn'),
    middleware: [refuseExpired],
    handle: (event, ctx) =>
      event.type === 'notification.withdrawn' ? handleWithdrawn(event, ctx) : handleNotification(event, ctx),
  });
  // The critical lane (docs/EMAIL.md): its own queue, so no backlog on SEND_QUEUE delays a security
  // alert; the other types on it are acked at once, hence a deeper prefetch than the regular lane.
  const criticalConsumer = messaging.consume<EventOf<'notification.created'>>({
    queue: CRITICAL_SEND_QUEUE,
    name: 'send-critical-email',
    prefetch: CRITICAL_LANE_PREFETCH,
    concurrency: config.EMAIL_CONSUMER_CONCURRENCY,
    timeoutMs: sendHandlerTimeoutMs(config),
    validate: only('notification.created'),
    middleware: [criticalLaneOnly, refuseExpiredEvents<EventOf<'notification.created'>>(maxEventAgeMs, clock)],
    handle: handleNotification,
  });
  // The user projection and, on the same queue, erasures (handlers/user-erased.ts): an erasure
  // waits behind the same user's earlier user.upserted instead of racing it.
  const upserted = userUpsertedHandler(pool);
  const erased = userErasedHandler(pool, USERS_QUEUE);
  messaging.consume<EventOf<'user.upserted'> | EventOf<'user.erased'>>({
    queue: USERS_QUEUE,
    name: 'user-projection',
    prefetch: 32,
    timeoutMs: 10_000,
    validate: only('user.upserted', 'user.erased'),
    handle: (event, ctx) => (event.type === 'user.erased' ? erased(event, ctx) : upserted(event, ctx)),
  });

  const lanes = pauseLanesWhileOpen(breaker, [sendConsumer, criticalConsumer], logger);

  const digestJobs: DigestJobDeps = {
    pool,
    sender,
    breaker,
    composer,
    metrics,
    logger: logger.child({ component: 'digest' }),
    leaseMs: config.EMAIL_LEASE_MS,
    holder,
    maxAttempts: config.DIGEST_MAX_ATTEMPTS,
    batchSize: config.DIGEST_BATCH_SIZE,
    concurrency: config.SMTP_POOL_SIZE,
  };
  // Delay-then-check (docs/EMAIL.md "Delivery timing"): asked with email-service's own service key.
  const heldDeps: HeldDeps = {
    ...digestJobs,
    logger: logger.child({ component: 'held-email' }),
    readState:
      config.EMAIL_READ_CHECK_DELAY_MS > 0
        ? new ReadStateClient({
            baseUrl: config.NOTIFICATION_SERVICE_URL,
            signingKey: config.EMAIL_SERVICE_SIGNING_KEY,
            issuer: 'email-service',
            timeoutMs: config.EMAIL_READ_CHECK_TIMEOUT_MS,
          })
        : undefined,
  };
  const preferences = new PreferencesClient(config.NOTIFICATION_SERVICE_URL, config.EMAIL_SERVICE_SIGNING_KEY);
  const syncDeps = { pool, preferences, metrics, logger: logger.child({ component: 'preferences-sync' }) };
  const ticker = new Ticker({
    intervalMs: config.DIGEST_FLUSH_INTERVAL_MS,
    clock,
    logger: logger.child({ component: 'ticker' }),
    steps: [
      { name: 'flush-digest-windows', run: (now) => flushDueWindows(digestJobs, now) },
      { name: 'send-digests', run: (now) => sendDueDigests(digestJobs, now) },
      { name: 'send-held-emails', run: (now) => sendDueHeld(heldDeps, now) },
      { name: 'sync-opt-outs', run: (now) => syncDueSuppressions(syncDeps, now) },
    ],
  });

  const readiness = readinessState();
  const app = buildApp({
    logger,
    registry,
    checks: async () => ({ ...readiness.checks(), ...messaging.readiness(), database: await databaseAnswers(pool) }),
    // `leases.waitingOnDeadHolders`: "consuming" alone hid messages that waited for a dead process.
    // `smtpBreaker` is the email queues' (open while every provider's is); `smtpProviders` each
    // provider's breaker, and which one takes new sends.
    details: () => ({
      smtpBreaker: breaker.describe(),
      smtpProviders: { ...breaker.describeProviders(), sendingThrough: breaker.preferred() ?? null },
      emailQueue: breaker.isOpen() ? 'paused' : 'consuming',
      leases: heartbeat.describe(),
      ...brokerDetails(messaging.blocked()),
    }),
    flowControl: () => smtpFlowControl(breaker, config, [SEND_QUEUE, CRITICAL_SEND_QUEUE]),
    unsubscribe: { ...syncDeps, tokens, now: clock, ttlDays: config.UNSUBSCRIBE_TOKEN_TTL_DAYS },
  });

  // Last, after the HTTP server stopped: requests still running during the drain need the pool.
  app.addHook('onClose', async () => pool.end());

  return {
    app,
    readiness,
    messaging,
    breaker,
    heartbeat,
    ticker,
    sendConsumer,
    criticalConsumer,
    pool,
    digestJobs,
    async start() {
      // Before consuming: the purge (the reconciler) must know the horizon the guard below assumes.
      await recordRetentionHorizon(pool, emailRetentionPolicy(config).retentionMs);
      await heartbeat.start();
      await messaging.start();
      if (deps.runTicker !== false) {
        ticker.start();
      }
    },
    async stop() {
      readiness.markShuttingDown();
      await ticker.stop();
      await messaging.stop(config.SHUTDOWN_TIMEOUT_MS);
      await heartbeat.stop();
      await breaker.stop();
      sender.close();
      await lanes.settled();
    },
  };
}
