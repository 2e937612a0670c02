/**
 * The per-author fan-out lease (`author:<id>`, docs/FEED.md "Fan-out" step 3): SET NX PX; only its
 * holder extends or releases it (lease-extend.lua, lease-release.lua: compare, then act, atomically).
 */
import { feedKeys as k, type FeedConnections } from './connections';

export function createLeases({ redis }: Pick<FeedConnections, 'redis'>) {
  return {
    async acquireAuthor(author: string, holder: string, ms: number): Promise<boolean> {
      if ((await redis.set(k.author(author), holder, 'PX', ms, 'NX')) === 'OK') return true;
      return (await redis.get(k.author(author))) === holder; // ours already (a redelivered plan)
    },
    async extendAuthor(author: string, holder: string, ms: number): Promise<void> {
      await redis.leaseExtend(k.author(author), holder, ms);
    },
    async releaseAuthor(author: string, holder: string): Promise<void> {
      await redis.leaseRelease(k.author(author), holder);
    },
  };
}
