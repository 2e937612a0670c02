import type { Pool } from 'pg';
import { TransientError, type MessageContext, type Outcome } from '@community/messaging';
import type { FeedConfig } from '../config';
import type { FeedMetrics } from '../metrics';
import type { FeedCache } from '../redis/cache';
import * as fanout from '../store/fanout';
import * as projections from '../store/projections';
import type { ReconcileMessage } from './internal-messages';

/**
 * feed-service.backfill, the low-priority lane: brings one follower's feed in line with the
 * current state of one edge (read from Postgres, so duplicates and out-of-order deliveries end
 * right). Following: the followee's latest FEED_BACKFILL_COUNT fanned-out posts are copied in.
 * Not following: they are removed, but only once no fan-out of the followee is running, so a
 * removal never lands before a chunk that still writes the post (never ahead of post fan-out).
 * A feed that is not materialised is left alone: its next read rebuilds it from the projections.
 * Past the handler's deadline (`ctx.signal`) no further step starts; the retry redoes them (each is
 * idempotent: ZADD, ZREM of the same members).
 */
export function createReconcileHandler(deps: {
  pool: Pool;
  cache: FeedCache;
  metrics: FeedMetrics;
  config: FeedConfig;
}) {
  const { pool, cache, metrics, config } = deps;
  return async (message: ReconcileMessage, ctx: Pick<MessageContext, 'signal'>): Promise<Outcome> => {
    const { followerId, followeeId } = message.data;
    const step = () => ctx.signal.throwIfAborted();
    step();
    if (!(await cache.isLive(followerId))) {
      metrics.backfills.inc({ action: 'skipped' });
      return 'skipped';
    }
    step();
    if (await projections.isFollowing(pool, followerId, followeeId)) {
      step();
      const posts = await projections.latestPushedPosts(pool, followeeId, config.FEED_BACKFILL_COUNT);
      step();
      await cache.putPosts(posts);
      step();
      await cache.pushPosts(followerId, posts);
      metrics.backfills.inc({ action: 'backfilled' });
      return 'processed';
    }
    if ((await fanout.unfinishedJobs(pool, followeeId)) > 0) {
      throw new TransientError(
        `a fan-out of '${followeeId}' is running; the removal from '${followerId}''s feed waits for it`,
        'FANOUT_RUNNING',
      );
    }
    step();
    const posts = await projections.latestPushedPosts(pool, followeeId, config.FEED_CAP);
    step();
    await cache.removePosts(
      followerId,
      posts.map((p) => p.postId),
    );
    metrics.backfills.inc({ action: 'removed' });
    return 'processed';
  };
}
