// Public entry for code outside the app (scripts/bench/feed.ts): the builder and its config.
export { createFeedService, type FeedService, type FeedServiceDeps } from './service';
export { FEED_CONFIG, loadFeedConfig, SERVICE_NAME, type FeedConfig } from './config';
export { FANOUT_QUEUE, ACTIVITY_QUEUE, BACKFILL_QUEUE } from './handlers/internal-messages';
