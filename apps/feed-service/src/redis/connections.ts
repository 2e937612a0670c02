/**
 * The connections and key names the feed's Redis modules share (feeds.ts, lanes.ts, leases.ts,
 * composed by cache.ts). Redis is a cache of the Postgres projections, never the truth (docs/FEED.md).
 *
 * Keys (all under the configured prefix, ioredis `keyPrefix`):
 *   f:<user>        sorted set of post ids scored by publishedAt (ms), capped at FEED_CAP
 *   live:<user>     fan-out may write this feed (set before a rebuild reads Postgres)
 *   ready:<user>    reads may trust this feed (set after a rebuild wrote it)
 *   rebuild:<user>  collapses rebuilds of one feed within a window (SET NX PX)
 *   p:<post>        the item body (JSON), one per post, shared by every feed (MGET for a page)
 *   author:<id>     the per-author fan-out lease (SET NX PX, extended by each chunk, released at the end)
 *   lane:small      small-lane work in flight: a sorted set of holders scored by their deadline (Redis
 *                   TIME, ms); large fan-outs' chunk writers yield while any deadline is in the future
 * live, ready and f: expire together, FEED_ACTIVE_WINDOW_DAYS after the reader's last activity:
 * an inactive user's feed disappears and fan-out stops writing it (the Lua guard on live:).
 */
import Redis from 'ioredis';
import type { Logger } from 'pino';
import type { FeedMetrics } from '../metrics';
import { defineFeedCommands, type FeedRedis } from './commands';

export interface FeedCacheOptions {
  url: string;
  prefix: string;
  cap: number;
  /** Lifetime of a feed after its reader's last activity (the active window). */
  feedTtlMs: number;
  logger: Logger;
  /** Only its Redis error counter (the reconciler passes its own). */
  metrics: Pick<FeedMetrics, 'redisErrors'>;
}

export const feedKeys = {
  feed: (u: string) => `f:${u}`,
  live: (u: string) => `live:${u}`,
  ready: (u: string) => `ready:${u}`,
  rebuild: (u: string) => `rebuild:${u}`,
  post: (p: string) => `p:${p}`,
  author: (a: string) => `author:${a}`,
  smallLane: 'lane:small',
};

export type Pipe = ReturnType<Redis['pipeline']>;

/** Runs a pipeline; throws its first command's error, else returns the replies in order. */
export async function exec(pipe: Pipe): Promise<unknown[]> {
  const results = (await pipe.exec()) ?? [];
  const failed = results.find(([err]) => err);
  if (failed) throw failed[0];
  return results.map(([, value]) => value);
}

export interface FeedConnections {
  /** Reads and small writes. */
  redis: FeedRedis;
  /** Fan-out chunks only (and the chunk writers' small-lane check). */
  bulk: FeedRedis;
  connect(): Promise<void>;
  close(): Promise<void>;
  available(): boolean;
}

export function createConnections(options: FeedCacheOptions): FeedConnections {
  const { logger, metrics } = options;
  const client = () =>
    defineFeedCommands(
      new Redis(options.url, {
        keyPrefix: options.prefix,
        lazyConnect: true,
        // Fail at once while disconnected: the API answers from Postgres instead of waiting, and a
        // handler's transient error goes to a retry tier (docs/FEED.md "Redis down").
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: 2_000,
        retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
      }),
    );
  // Two connections: `redis` for reads and small writes, `bulk` for fan-out chunks only. Replies on
  // one connection come back in order, so on a shared socket a feed read or a small post's write
  // waits behind every chunk call queued before it; on its own socket it waits at most for the one
  // script Redis is running (docs/FEED.md "Lanes").
  const redis = client();
  const bulk = client();
  // Without a listener an 'error' event would crash the process; Redis being down is a state the
  // service serves through (from Postgres), logged once per outage rather than once per retry.
  let down = false;
  redis.on('error', (err: Error) => {
    metrics.redisErrors.inc();
    if (!down) logger.warn({ err: err.message }, 'redis unavailable: feeds are read from Postgres until it returns');
    down = true;
  });
  redis.on('ready', () => {
    if (down) logger.info('redis available again');
    down = false;
  });
  bulk.on('error', () => metrics.redisErrors.inc()); // logged once by the main connection's listener

  return {
    redis,
    bulk,
    async connect(): Promise<void> {
      // A Redis that is down at start is not fatal: the client keeps retrying and reads fall back.
      await Promise.all([
        redis.connect().catch((err: Error) => logger.warn({ err: err.message }, 'redis not reachable at start')),
        bulk.connect().catch(() => undefined),
      ]);
    },
    async close(): Promise<void> {
      redis.disconnect();
      bulk.disconnect();
    },
    available(): boolean {
      return redis.status === 'ready';
    },
  };
}
