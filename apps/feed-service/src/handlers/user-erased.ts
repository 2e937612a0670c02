import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { MessageContext, Outcome } from '@community/messaging';
import type { FeedCache } from '../redis/cache';
import { alreadyErased, eraseUser, footprint } from '../store/erasure';

export interface UserErasedDeps {
  pool: Pool;
  cache: FeedCache;
  /** The inbox consumer name (the queue). */
  consumer: string;
}

/**
 * user.erased (docs/RUNBOOK.md "Erasure"), on feed-service.activity. Redis first, then Postgres:
 *
 * 1. a redelivery of an erasure already committed (its inbox claim) is a duplicate at once;
 * 2. read what Redis holds of the user from the projections (posts, followers), and delete it
 *    from Redis: the user's own keys, the post bodies, the posts in the followers' feeds;
 * 3. delete the projections and claim the event, in one transaction (store/erasure.ts).
 *
 * In this order a failure anywhere is retried whole: Redis is forgotten again (idempotent), and the
 * projections the Redis step needs are still there until the transaction commits. (Postgres first
 * would leave the Redis keys behind for good if Redis failed after the commit: the retry would find
 * the claim.) A Redis outage therefore holds the erasure in the retry tiers until Redis is back.
 */
export function createUserErasedHandler(deps: UserErasedDeps) {
  const { pool, cache, consumer } = deps;
  return async (event: EventOf<'user.erased'>, ctx: MessageContext): Promise<Outcome> => {
    const { userId, erasureId } = event.data;
    if (await alreadyErased(pool, consumer, event.id)) return 'duplicate';
    const found = await footprint(pool, userId);
    ctx.signal.throwIfAborted();
    await cache.forgetUser(userId, found.postIds, found.followerIds);
    ctx.signal.throwIfAborted();
    const counts = await withTransaction(pool, { signal: ctx.signal }, (tx) =>
      eraseUser(tx, consumer, event.id, userId),
    );
    if (!counts) return 'duplicate';
    ctx.logger.info({ erasureId, ...counts, redisFeeds: found.followerIds.length }, 'user erased');
    return 'processed';
  };
}
