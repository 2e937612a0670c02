/**
 * The small-lane marker (`lane:small`, docs/FEED.md "Lanes"): small-lane work in flight, a holder
 * whose deadline (Redis TIME) has not passed; large fan-outs' chunk writers yield while there is any
 * (feed-push-many.lua checks it atomically with the write, feeds.ts pushToFeeds).
 */
import { feedKeys as k, type FeedConnections } from './connections';

export function createLanes({ redis, bulk }: Pick<FeedConnections, 'redis' | 'bulk'>) {
  return {
    async enterSmallLane(holder: string, ttlMs: number): Promise<void> {
      await redis.laneEnter(k.smallLane, holder, ttlMs);
    },
    async leaveSmallLane(holder: string): Promise<void> {
      await redis.zrem(k.smallLane, holder);
    },
    /** On the bulk connection: asked by chunk writers only, so the answer never waits behind reads. */
    async smallLaneBusy(): Promise<boolean> {
      return (await bulk.laneBusy(k.smallLane)) > 0;
    },
  };
}
