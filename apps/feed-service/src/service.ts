import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { validateOrThrow, type AnyEvent } from '@community/contracts';
import { createPgPool } from '@community/db';
import type { Messaging, Topology } from '@community/messaging';
import {
  authSettingsFrom,
  readinessState,
  type ReadinessState,
  serviceMessaging,
  databaseAnswers,
} from '@community/service';
import { buildApp } from './app';
import { SERVICE_NAME, type FeedConfig } from './config';
import { createUserErasedHandler } from './handlers/user-erased';
import { createActivityHandler } from './handlers/activity';
import { createFanout, type Fanout } from './fanout/engine';
import {
  ACTIVITY_QUEUE,
  BACKFILL_QUEUE,
  FANOUT_QUEUE,
  validateFanoutChunk,
  validateReconcile,
} from './handlers/internal-messages';
import { createReconcileHandler } from './handlers/reconcile';
import { feedMetrics, type FeedMetrics } from './metrics';
import { createFeedReader, type FeedReader } from './read/feed-reader';
import { createFeedCache, type FeedCache } from './redis/cache';

export interface FeedServiceDeps {
  logger: Logger;
  registry: Registry;
  /** COMMUNITY_TOPOLOGY unless a test passes one with short retry delays. */
  topology?: Topology;
  /** Consume (default true). False builds an HTTP-only replica (tests of the API). */
  messaging?: boolean;
  clock?: () => Date;
}

export interface FeedService {
  app: FastifyInstance;
  readiness: ReadinessState;
  pool: Pool;
  cache: FeedCache;
  metrics: FeedMetrics;
  fanout: Fanout;
  reader: FeedReader;
  messaging?: Messaging;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The composition of the service: pool → Redis → messaging → three consumers (activity, fan-out
 * chunks, backfill: three lanes, docs/FEED.md "Lanes"; FEED_LANES picks which this replica runs) → HTTP. Building does no I/O but open the
 * broker connection; start() connects Redis and starts consuming.
 */
export function createFeedService(config: FeedConfig, deps: FeedServiceDeps): FeedService {
  const { logger, registry } = deps;
  const metrics = feedMetrics(registry);
  const pool = createPgPool(config.DATABASE_URL, {
    max: config.DATABASE_POOL_MAX,
    min: config.DATABASE_POOL_MIN ?? config.DATABASE_POOL_MAX,
    applicationName: SERVICE_NAME,
    logger,
  });
  const cache = createFeedCache({
    url: config.REDIS_URL,
    prefix: config.FEED_REDIS_PREFIX,
    cap: config.FEED_CAP,
    feedTtlMs: config.FEED_ACTIVE_WINDOW_DAYS * 86_400_000,
    logger: logger.child({ component: 'redis' }),
    metrics,
  });

  let messaging: Messaging | undefined;
  if (deps.messaging !== false) {
    messaging = serviceMessaging(config, { service: SERVICE_NAME, topology: deps.topology, logger, registry });
  }
  const fanout = createFanout({ pool, cache, metrics, config, publisher: messaging?.publisher, clock: deps.clock });
  if (messaging) {
    const publisher = messaging.publisher;
    const lanes = config.FEED_LANES;
    // Every handler's deadline: its ctx.signal aborts at FEED_HANDLER_TIMEOUT_MS and the handlers stop
    // there, committing nothing more (fanout/engine.ts "Deadline").
    const timeoutMs = config.FEED_HANDLER_TIMEOUT_MS;
    if (lanes !== 'fanout') {
      // The activity lane: post.published (small fan-outs inline), follows. Its own consumer, so a
      // large fan-out's chunks on feed-service.fanout never queue in front of a small post.
      messaging.consume<AnyEvent>({
        queue: ACTIVITY_QUEUE,
        name: `${ACTIVITY_QUEUE}:feed`,
        prefetch: 16,
        concurrency: 8,
        timeoutMs,
        validate: validateOrThrow,
        handle: createActivityHandler({
          pool,
          fanout,
          publisher,
          cache,
          erase: createUserErasedHandler({ pool, cache, consumer: ACTIVITY_QUEUE }),
        }),
      });
      messaging.consume({
        queue: BACKFILL_QUEUE,
        name: `${BACKFILL_QUEUE}:reconcile`,
        prefetch: 2,
        concurrency: 1,
        timeoutMs,
        validate: validateReconcile,
        handle: createReconcileHandler({ pool, cache, metrics, config }),
      });
    }
    if (lanes !== 'activity') {
      messaging.consume({
        queue: FANOUT_QUEUE,
        name: `${FANOUT_QUEUE}:chunks`,
        // More messages buffered than written at once: the next chunk is here when one is acked,
        // instead of one broker round trip per chunk between them (docs/FEED.md "Lanes").
        prefetch: config.FEED_FANOUT_CONCURRENCY * 4,
        concurrency: config.FEED_FANOUT_CONCURRENCY,
        timeoutMs,
        validate: validateFanoutChunk,
        handle: (msg, ctx) => fanout.runChunk(msg.data.postId, msg.data.chunkNo, ctx.logger, 'large', ctx.signal),
      });
    }
  }
  const reader = createFeedReader({ pool, cache, metrics, config, logger });

  const readiness = readinessState();
  const app = buildApp({
    logger,
    registry,
    reader,
    auth: authSettingsFrom(SERVICE_NAME, config),
    readiness: async () => ({
      ...readiness.checks(),
      ...messaging?.readiness(),
      database: await databaseAnswers(pool),
    }),
    // Redis down affects every replica alike and the feed still answers (from Postgres): a detail,
    // not a reason to take this replica out of rotation (docs/SERVICE-TEMPLATE.md "Readiness").
    readinessDetails: () => ({ redis: cache.available() ? 'up' : 'down (feeds answered from Postgres)' }),
  });
  app.addHook('onClose', async () => pool.end());

  return {
    app,
    readiness,
    pool,
    cache,
    metrics,
    fanout,
    reader,
    messaging,
    async start() {
      await cache.connect();
      await messaging?.start();
    },
    async stop() {
      readiness.markShuttingDown();
      await messaging?.stop(Math.max(1000, config.SHUTDOWN_TIMEOUT_MS - 2000));
      await cache.close();
    },
  };
}
