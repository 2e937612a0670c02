/**
 * Rebuilding one materialised feed from the projections: the read path's miss (feed-reader.ts) and
 * the reconciler's checks and on-demand rebuilds (apps/reconciler, through this app's index) run
 * this same code, so "what a feed should hold" has one definition.
 */
import type { Pool } from 'pg';
import type { FeedCache } from '../redis/cache';
import * as projections from '../store/projections';

export interface FeedEntry {
  postId: string;
  /** publishedAt in ms: the sorted set's score. */
  at: number;
}

/**
 * Fan-out may write from the moment live: is set, so nothing published during the rebuild is
 * missed. Additive (ZADD): an entry the projections no longer hold stays; `exact` clears the feed
 * first (ready: goes first, so reads meanwhile take the miss path and answer from Postgres).
 */
export async function rebuildFeed(
  deps: { pool: Pool; cache: FeedCache; cap: number },
  userId: string,
  options: {
    exact?: boolean;
    /** Wraps the Redis calls (the read path tells a Redis failure from a database one). */ redis?: <T>(
      fn: () => Promise<T>,
    ) => Promise<T>;
  } = {},
): Promise<number> {
  const { pool, cache, cap } = deps;
  const redis = options.redis ?? (<T>(fn: () => Promise<T>) => fn());
  await redis(async () => {
    if (options.exact) await cache.clear(userId);
    await cache.markLive(userId);
  });
  const posts = await projections.feedFromProjections(pool, userId, 'pushed', { limit: cap });
  await redis(async () => {
    await cache.putPosts(posts);
    await cache.pushPosts(userId, posts);
    await cache.markReady(userId);
  });
  return posts.length;
}

/** What the materialised feed of `userId` should hold: its newest `cap` fanned-out posts, newest first. */
export async function expectedFeed(pool: Pool, userId: string, cap: number): Promise<FeedEntry[]> {
  return (await projections.feedFromProjections(pool, userId, 'pushed', { limit: cap })).map((p) => ({
    postId: p.postId,
    at: p.publishedAt.getTime(),
  }));
}

export interface FeedDiff {
  /** In the projections, not in the feed (or with another score). */
  missing: FeedEntry[];
  /** In the feed, not in the projections (or with another score). */
  extra: FeedEntry[];
}

/**
 * Compares a materialised feed with its expected entries, ignoring entries newer than
 * `settledBefore` (ms) on both sides: a fan-out in flight is not drift.
 */
export function diffFeed(
  expected: readonly FeedEntry[],
  actual: readonly FeedEntry[],
  settledBefore = Number.POSITIVE_INFINITY,
): FeedDiff {
  const key = (e: FeedEntry) => `${e.postId}@${e.at}`;
  const exp = expected.filter((e) => e.at < settledBefore);
  const act = actual.filter((e) => e.at < settledBefore);
  const expKeys = new Set(exp.map(key));
  const actKeys = new Set(act.map(key));
  return { missing: exp.filter((e) => !actKeys.has(key(e))), extra: act.filter((e) => !expKeys.has(key(e))) };
}
