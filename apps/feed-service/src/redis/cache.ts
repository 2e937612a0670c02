/**
 * The Redis side of the feed: a cache of the Postgres projections, never the truth (docs/FEED.md).
 * One object over two connections (connections.ts, where the keys are listed), composed of the
 * feeds and item bodies (feeds.ts), the per-author fan-out lease (leases.ts) and the small-lane
 * marker (lanes.ts); their Lua scripts are commands/*.lua.
 */
import { createConnections, feedKeys, type FeedCacheOptions } from './connections';
import { createFeeds } from './feeds';
import { createLanes } from './lanes';
import { createLeases } from './leases';

export type { FeedCacheOptions } from './connections';
export { toItem, type FeedItem } from './feeds';

export type FeedCache = ReturnType<typeof createFeedCache>;

export function createFeedCache(options: FeedCacheOptions) {
  const connections = createConnections(options);
  const { redis, connect, close, available } = connections;
  return {
    redis,
    keys: feedKeys,
    connect,
    close,
    available,
    ...createFeeds(connections, options),
    ...createLanes(connections),
    ...createLeases(connections),
  };
}
