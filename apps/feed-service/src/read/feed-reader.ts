/**
 * The read path of GET /v1/users/:userId/feed (docs/FEED.md "Reads").
 *
 *   ready:<user> set   → hit: the page from the sorted set (+ bodies by MGET), merged with the
 *                        large authors' posts from Postgres
 *   not set            → miss: rebuild from the projections (one caller per window: SET NX PX),
 *                        then as a hit; a concurrent caller reads the projections directly
 *   Redis unavailable  → fallback: the page from the projections (slower, the same answer)
 *
 * Every path answers the same page: the projections are the truth and the sorted set only holds
 * what they say (capped; a page past the cap is read from Postgres).
 */
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { FeedConfig } from '../config';
import type { FeedKey } from '../domain/cursor';
import { mergePage } from '../domain/merge';
import type { FeedMetrics } from '../metrics';
import { toItem, type FeedCache, type FeedItem } from '../redis/cache';
import * as projections from '../store/projections';
import { rebuildFeed } from './rebuild';

/** A reader's activity row is written at most once a minute (the feed's expiry follows it). */
const TOUCH_THROTTLE_MS = 60_000;

class CacheUnavailable extends Error {}

export interface FeedPage {
  items: FeedItem[];
  result: 'hit' | 'miss' | 'fallback';
}

export function createFeedReader(deps: {
  pool: Pool;
  cache: FeedCache;
  metrics: FeedMetrics;
  config: FeedConfig;
  logger: Logger;
}) {
  const { pool, cache, metrics, config, logger } = deps;

  /** A cache call whose failure means "answer from Postgres", unlike a database error. */
  async function cached<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new CacheUnavailable((err as Error).message, { cause: err });
    }
  }

  async function fromProjections(userId: string, cursor: FeedKey | undefined, limit: number): Promise<FeedItem[]> {
    return (await projections.feedFromProjections(pool, userId, 'all', { cursor, limit })).map(toItem);
  }

  /** The shared rebuild (rebuild.ts): a failure of a Redis call means "answer from Postgres", a database error stays one. */
  async function rebuild(userId: string): Promise<void> {
    await rebuildFeed({ pool, cache, cap: config.FEED_CAP }, userId, { redis: cached });
    metrics.regenerations.inc();
  }

  /** The page of a ready feed merged with the large authors' posts; undefined when not ready; null past the cap. */
  async function fromCache(
    userId: string,
    cursor: FeedKey | undefined,
    limit: number,
  ): Promise<FeedItem[] | undefined | null> {
    const [page, large] = await Promise.all([
      cached(() => cache.readyPage(userId, cursor, limit)),
      projections.feedFromProjections(pool, userId, 'unpushed', { cursor, limit }),
    ]);
    if (!page) return undefined;
    // Past the cap the sorted set has no more to say: that page comes from Postgres.
    if (page.items.length + page.missing.length < limit && page.size >= config.FEED_CAP) return null;
    let items = page.items;
    if (page.missing.length > 0) {
      const loaded = await projections.postsByIds(
        pool,
        page.missing.map((m) => m.postId),
      );
      await cached(() => cache.putPosts(loaded)).catch(() => undefined);
      items = [...items, ...loaded.map(toItem)];
    }
    return mergePage([items, large.map(toItem)], cursor, limit);
  }

  // Readers this replica marked active in the last TOUCH_THROTTLE_MS: their next reads skip the
  // activity statement altogether (the database throttles across replicas; this saves the round trip).
  const recentlyTouched = new Map<string, number>();
  async function touch(userId: string): Promise<boolean> {
    const now = Date.now();
    if (now - (recentlyTouched.get(userId) ?? 0) < TOUCH_THROTTLE_MS) return false;
    if (recentlyTouched.size >= 100_000) recentlyTouched.clear();
    recentlyTouched.set(userId, now);
    return projections.touchReader(pool, userId, TOUCH_THROTTLE_MS);
  }

  async function read(userId: string, cursor: FeedKey | undefined, limit: number): Promise<FeedPage> {
    const touched = await touch(userId);
    let result: FeedPage['result'] = 'hit';
    try {
      if (!cache.available()) throw new CacheUnavailable('redis is not connected');
      // A hit: one Redis round trip (ready check, page, bodies) beside the large authors' query.
      let items = await fromCache(userId, cursor, limit);
      if (items === undefined) {
        result = 'miss';
        if (!(await cached(() => cache.claimRebuild(userId, config.FEED_REBUILD_DEDUPE_MS)))) {
          return record({ items: await fromProjections(userId, cursor, limit), result });
        }
        await rebuild(userId);
        items = await fromCache(userId, cursor, limit);
      } else if (touched) await cached(() => cache.extend(userId));
      return record({ items: items ?? (await fromProjections(userId, cursor, limit)), result });
    } catch (err) {
      if (!(err instanceof CacheUnavailable)) throw err;
      logger.debug({ err: err.message, userId }, 'feed read from Postgres: redis unavailable');
      return record({ items: await fromProjections(userId, cursor, limit), result: 'fallback' });
    }
  }

  function record(page: FeedPage): FeedPage {
    metrics.cacheReads.inc({ result: page.result });
    return page;
  }

  return { read, rebuild };
}

export type FeedReader = ReturnType<typeof createFeedReader>;
