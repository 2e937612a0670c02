/**
 * feed-service's public entry: what code outside the app (benchmarks, end-to-end tests) builds it
 * from. Everything else under src/ is internal and may change shape without notice.
 */
export { createFeedService, type FeedService, type FeedServiceDeps } from './service';
export { FEED_CONFIG, loadFeedConfig, SERVICE_NAME, type FeedConfig } from './config';
export { FANOUT_QUEUE, ACTIVITY_QUEUE, BACKFILL_QUEUE, sendFanoutChunk } from './handlers/internal-messages';
// The reconciler's feed checks and rebuilds (apps/reconciler/src/jobs/feeds.ts) use the same cache
// and rebuild code as the read path.
export { createFeedCache, type FeedCache, type FeedCacheOptions } from './redis/cache';
export { rebuildFeed, expectedFeed, diffFeed, type FeedEntry, type FeedDiff } from './read/rebuild';
// The reconciler's stuck-work and lost-work checks over the fan-out tables.
export { countStuckChunks, pendingChunksSql, stuckFanoutChunks, type StuckChunk } from './store/stuck';
export { purgeFeedHistory, type FeedPurgeCounts, type FeedPurgeOptions } from './store/retention';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
