import type { Pool } from 'pg';
import type { AnyEvent, EventOf } from '@community/contracts';
import type { MessageContext, Outcome, Publisher } from '@community/messaging';
import * as projections from '../store/projections';
import type { Fanout } from '../fanout/engine';
import type { FeedCache } from '../redis/cache';
import { sendReconcile } from './internal-messages';

export interface ActivityDeps {
  pool: Pool;
  fanout: Fanout;
  publisher: Publisher;
  cache: FeedCache;
  /** user.erased, which arrives on this queue too (handlers/user-erased.ts). */
  erase: (event: EventOf<'user.erased'>, ctx: MessageContext) => Promise<Outcome>;
}

/**
 * feed-service.activity: post.published plans (or, for one chunk, performs) the fan-out;
 * user.followed / user.unfollowed update the follow projection by occurredAt and hand the
 * follower's feed to the backfill lane; post.deleted takes the post out of every feed (a tombstone
 * keeps a late post.published out: store/projections.ts deletePost); user.erased erases the user (handlers/user-erased.ts, which
 * alone claims its event in the inbox). Everything else here is idempotent: a redelivery re-applies
 * the same state, so no inbox table is needed.
 */
export function createActivityHandler(deps: ActivityDeps) {
  const { pool, fanout, publisher } = deps;
  return async (event: AnyEvent, ctx: MessageContext): Promise<Outcome> => {
    switch (event.type) {
      case 'post.published': {
        const { postId, authorId, title, excerpt } = event.data;
        return fanout.onPost(
          {
            postId,
            authorId,
            title,
            excerpt,
            publishedAt: new Date(event.occurredAt),
            correlationId: event.correlationId,
          },
          ctx.logger,
          ctx.signal,
        );
      }
      case 'user.followed':
      case 'user.unfollowed': {
        const { followerId, followeeId } = event.data;
        const occurredAt = new Date(event.occurredAt);
        const wanted = event.type === 'user.followed';
        // A follow is small-lane work too: large fan-outs yield while it runs (docs/FEED.md "Lanes").
        const mark = fanout.smallLaneMark();
        await mark.enter();
        try {
          // Past the deadline (ctx.signal) nothing more is done: the edge's transaction is cancelled and
          // rolled back, and the retry applies the event (idempotent by occurredAt).
          const result = await projections.applyFollow(
            pool,
            followerId,
            followeeId,
            { active: wanted, occurredAt },
            ctx.signal,
          );
          ctx.signal.throwIfAborted();
          await projections.recordActivity(pool, followerId, occurredAt);
          // The edge is in this event's state (applied now, or by an earlier delivery of it): the
          // follower's feed follows on the backfill lane. A stale event changed nothing and sends nothing.
          if (result.active !== wanted) return 'duplicate';
          ctx.signal.throwIfAborted();
          await sendReconcile(publisher, { followerId, followeeId }, event.correlationId);
          return result.changed ? 'processed' : 'duplicate';
        } finally {
          await mark.leave();
        }
      }
      case 'user.erased':
        return deps.erase(event, ctx);
      case 'post.deleted': {
        // Postgres first (the tombstone stops a fan-out that has not started, the job's deletion one
        // that has), then Redis: a Redis failure retries the whole, idempotently.
        const followers = await projections.deletePost(pool, event.data.postId, event.data.authorId);
        ctx.signal.throwIfAborted();
        await deps.cache.forgetPost(event.data.postId, followers);
        return 'processed';
      }
      default:
        // Only the five bound routing keys arrive here; anything else is acknowledged and ignored.
        return 'skipped';
    }
  };
}
