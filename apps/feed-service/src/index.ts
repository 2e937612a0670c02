/**
 * feed-service's public entry: what code outside the app (benchmarks, end-to-end tests) builds it
 * from. Everything else under src/ is internal and may change shape without notice.
 */
export { createFeedService, type FeedService, type FeedServiceDeps } from './service';
export { FEED_CONFIG, loadFeedConfig, SERVICE_NAME, type FeedConfig } from './config';
export { FANOUT_QUEUE, ACTIVITY_QUEUE, BACKFILL_QUEUE } from './handlers/internal-messages';
