import { commonConfig, ConfigError, loadConfig, type ConfigOf, type ConfigSpec } from '@community/config';

/** Names this service everywhere: logs, metrics, the AMQP connection, the pg application_name. */
export const SERVICE_NAME = 'feed-service';

/** The shared variables (docs/CONTRACT.md "Configuration", REDIS_URL among them) plus this service's tunables (docs/FEED.md). */
export const FEED_CONFIG = [
  ...commonConfig(SERVICE_NAME),
  {
    name: 'DATABASE_POOL_MAX',
    kind: 'int',
    default: 10,
    min: 2,
    max: 200,
    description: 'pg pool size (handlers + HTTP reads)',
  },
  {
    name: 'DATABASE_POOL_MIN',
    kind: 'int',
    optional: true,
    min: 0,
    max: 200,
    description:
      'pg connections kept open once opened (unset: all of DATABASE_POOL_MAX, so a burst of reads never waits for a new connection; 0: close any idle for 10 s)',
  },
  {
    name: 'FEED_ACTIVE_WINDOW_DAYS',
    kind: 'int',
    default: 7,
    min: 1,
    max: 365,
    description:
      'a user seen (feed read, post, follow) within this many days is active: fan-out writes their feed; older feeds expire and are regenerated on the next read',
  },
  {
    name: 'FEED_FANOUT_CHUNK_SIZE',
    kind: 'int',
    default: 1000,
    min: 1,
    max: 100_000,
    description:
      'followers per fan-out chunk (one message on feed-service.fanout, one pipelined Redis round trip, one checkpoint); a fan-out of at most one chunk runs inline',
  },
  {
    name: 'FEED_CAP',
    kind: 'int',
    default: 800,
    min: 10,
    max: 100_000,
    description: 'entries kept per materialised feed (older pages are read from Postgres)',
  },
  {
    name: 'FEED_LARGE_AUTHOR_THRESHOLD',
    kind: 'int',
    default: 10_000,
    min: 1,
    description:
      'authors with more followers than this are not fanned out: their posts are merged into feeds at read time',
  },
  {
    name: 'FEED_BACKFILL_COUNT',
    kind: 'int',
    default: 100,
    min: 0,
    max: 10_000,
    description: "a follow copies this many of the followee's latest posts into the follower's feed",
  },
  {
    name: 'FEED_REDIS_PREFIX',
    kind: 'string',
    default: 'feed:',
    minLength: 1,
    description: 'prefix of every Redis key of this service (tests and benchmarks use their own)',
  },
  {
    name: 'FEED_FANOUT_CONCURRENCY',
    kind: 'int',
    default: 1,
    min: 1,
    max: 32,
    description:
      'fan-out chunks in flight per replica (the large-fan-out lane; the activity lane has its own consumer). 1: when a small post arrives at most one batch or query of a fan-out is in flight ahead of it (docs/FEED.md "Lanes"); add fan-out replicas for throughput',
  },
  {
    name: 'FEED_FANOUT_YIELD_MAX_MS',
    kind: 'duration-ms',
    default: 100,
    min: 0,
    max: 10_000,
    description:
      'the small lane pre-empts large fan-outs: while a small post or follow is being handled anywhere, a chunk writer pauses before its follower query, each Redis batch and its checkpoint, for at most this long per chunk in total (the starvation bound); 0 turns pre-emption off (docs/FEED.md "Lanes")',
  },
  {
    name: 'FEED_SMALL_LANE_MARK_MS',
    kind: 'duration-ms',
    default: 1_000,
    min: 50,
    max: 60_000,
    description:
      "lifetime of a small-lane holder's mark: a handler that crashes without clearing it stops holding large fan-outs back after this long",
  },
  {
    name: 'FEED_LANES',
    kind: 'enum',
    values: ['all', 'activity', 'fanout'],
    default: 'all',
    description:
      'which queues this replica consumes: all; activity (feed-service.activity + feed-service.backfill); fanout (feed-service.fanout chunks only). Separate replicas keep a large fan-out off the small posts\' CPU (docs/FEED.md "Lanes")',
  },
  {
    name: 'FEED_AUTHOR_LEASE_MS',
    kind: 'duration-ms',
    default: 60_000,
    min: 1_000,
    max: 3_600_000,
    description:
      "per-author fan-out lock lifetime, extended by every chunk: how long a crashed fan-out holds back the author's next one",
  },
  {
    name: 'FEED_HANDLER_TIMEOUT_MS',
    kind: 'duration-ms',
    default: 30_000,
    min: 100,
    max: 600_000,
    description:
      "deadline of one message handler (a post, a follow, a chunk, a backfill): past it the handler's signal aborts, the handler stops and commits nothing more, and the message goes to a retry tier",
  },
  {
    name: 'FEED_REBUILD_DEDUPE_MS',
    kind: 'duration-ms',
    default: 30_000,
    min: 100,
    max: 3_600_000,
    description: "rebuilds of one user's feed within this window collapse into one (SET NX PX)",
  },
] as const satisfies ConfigSpec;

export type FeedConfig = ConfigOf<typeof FEED_CONFIG>;

export function loadFeedConfig(env: Record<string, string | undefined> = process.env): FeedConfig {
  const config = loadConfig(FEED_CONFIG, env);
  if (config.FEED_BACKFILL_COUNT > config.FEED_CAP) {
    throw new ConfigError([
      {
        name: 'FEED_BACKFILL_COUNT',
        message: `FEED_BACKFILL_COUNT: ${config.FEED_BACKFILL_COUNT} exceeds FEED_CAP (${config.FEED_CAP}); a backfill cannot keep more than a feed holds`,
      },
    ]);
  }
  if (config.DATABASE_POOL_MIN !== undefined && config.DATABASE_POOL_MIN > config.DATABASE_POOL_MAX) {
    throw new ConfigError([
      {
        name: 'DATABASE_POOL_MIN',
        message: `DATABASE_POOL_MIN: ${config.DATABASE_POOL_MIN} exceeds DATABASE_POOL_MAX (${config.DATABASE_POOL_MAX})`,
      },
    ]);
  }
  return config;
}
