/**
 * The materialised feeds and their item bodies (`f:`, `live:`, `ready:`, `rebuild:`, `p:`; keys in
 * connections.ts): fan-out's writes, rebuilds' markers, erasure, and the read path's pages.
 */
import type { PostRow } from '../store/projections';
import { isAfter, type FeedKey } from '../domain/cursor';
import { exec, feedKeys as k, type FeedCacheOptions, type FeedConnections } from './connections';

/** Feeds written per feed-push-many.lua call: bounds how long one call holds Redis (~0.5 ms), so a small post's commands interleave. */
const PUSH_MANY_BATCH = 250;

export interface FeedItem extends FeedKey {
  authorId: string;
  title: string;
  excerpt: string;
  publishedAt: string;
}

export function toItem(post: PostRow): FeedItem {
  const publishedAt = post.publishedAt.toISOString();
  return {
    postId: post.postId,
    authorId: post.authorId,
    title: post.title,
    excerpt: post.excerpt,
    publishedAt,
    at: post.publishedAt.getTime(),
  };
}

type Page = { items: FeedItem[]; missing: FeedKey[]; size: number };

export function createFeeds(
  { redis, bulk }: Pick<FeedConnections, 'redis' | 'bulk'>,
  options: Pick<FeedCacheOptions, 'prefix' | 'cap' | 'feedTtlMs'>,
) {
  const { cap, feedTtlMs } = options;

  /**
   * One page of the materialised feed after `cursor`: ids and scores by ZRANGE BYSCORE REV from
   * the cursor's score, skipping its ties that sort before it, then the bodies by MGET. Bodies
   * missing (evicted, flushed) come back as ids for the caller to load from Postgres.
   */
  async function page(user: string, cursor: FeedKey | undefined, limit: number): Promise<Page> {
    const keys: FeedKey[] = [];
    let offset = 0;
    const batch = limit + 16;
    for (;;) {
      const raw = await redis.zrange(
        k.feed(user),
        cursor ? cursor.at : '+inf',
        '-inf',
        'BYSCORE',
        'REV',
        'LIMIT',
        offset,
        batch,
        'WITHSCORES',
      );
      for (let i = 0; i < raw.length; i += 2) {
        const key = { postId: raw[i], at: Number(raw[i + 1]) };
        if (isAfter(key, cursor)) keys.push(key);
      }
      offset += raw.length / 2;
      if (keys.length >= limit || raw.length / 2 < batch) break;
    }
    keys.splice(limit);
    const size = keys.length < limit ? await redis.zcard(k.feed(user)) : cap;
    if (keys.length === 0) return { items: [], missing: [], size };
    const bodies = await redis.mget(keys.map((x) => k.post(x.postId)));
    const items: FeedItem[] = [];
    const missing: FeedKey[] = [];
    bodies.forEach((body, i) => (body ? items.push(JSON.parse(body) as FeedItem) : missing.push(keys[i])));
    return { items, missing, size };
  }

  return {
    /** Item bodies, one key per post (written before any feed references the post). */
    async putPosts(posts: PostRow[]): Promise<void> {
      if (posts.length === 0) return;
      const pipe = redis.pipeline();
      for (const p of posts) pipe.set(k.post(p.postId), JSON.stringify(toItem(p)), 'PX', feedTtlMs);
      await exec(pipe);
    },

    /**
     * One post into many feeds (a fan-out chunk): one feed-push-many.lua call per PUSH_MANY_BATCH
     * feeds, on the bulk connection. Returns feeds written. With `yieldTo`, a batch finding
     * small-lane work in flight writes nothing; `yieldTo.wait()` is awaited (it sleeps, or returns
     * false once the chunk's yield budget is spent) and the batch is retried, writing regardless
     * once it is false (`canYield()`: budget left, so a capped chunk does not ask again). With
     * `signal`, no batch is sent after it aborted (the handler's deadline): the chunk stops between batches.
     */
    async pushToFeeds(
      users: string[],
      post: { postId: string; at: number },
      yieldTo?: { canYield(): boolean; wait(): Promise<boolean>; resumed(): void },
      signal?: AbortSignal,
    ): Promise<number> {
      let written = 0;
      for (let i = 0; i < users.length; i += PUSH_MANY_BATCH) {
        signal?.throwIfAborted();
        const keys: string[] = [k.smallLane];
        for (const u of users.slice(i, i + PUSH_MANY_BATCH)) keys.push(k.feed(u), k.live(u));
        let yielding = yieldTo?.canYield() ?? false;
        for (;;) {
          const n = await bulk.feedPushMany(keys.length, ...keys, post.at, post.postId, cap, yielding ? 1 : 0);
          if (n >= 0) {
            written += n;
            yieldTo?.resumed();
            break;
          }
          yielding = (await yieldTo?.wait()) ?? false;
          signal?.throwIfAborted();
        }
      }
      return written;
    },

    /** Many posts into one feed (a rebuild, a backfill), if it is live (feed-push.lua). */
    async pushPosts(user: string, posts: PostRow[]): Promise<boolean> {
      if (posts.length === 0) return (await redis.exists(k.live(user))) === 1;
      const args: Array<string | number> = [];
      for (const p of posts) args.push(p.publishedAt.getTime(), p.postId);
      return (await redis.feedPush(k.feed(user), k.live(user), cap, ...args)) === 1;
    },

    async removePosts(user: string, postIds: string[]): Promise<void> {
      if (postIds.length > 0) await redis.zrem(k.feed(user), ...postIds);
    },

    /** The whole materialised feed, newest first (the reconciler's check). */
    async entries(user: string): Promise<Array<{ postId: string; at: number }>> {
      const raw = await redis.zrange(k.feed(user), 0, -1, 'REV', 'WITHSCORES');
      const out: Array<{ postId: string; at: number }> = [];
      for (let i = 0; i < raw.length; i += 2) out.push({ postId: raw[i], at: Number(raw[i + 1]) });
      return out;
    },
    /** A deleted post (post.deleted): its body and its place in the followers' feeds. */
    async forgetPost(postId: string, followerIds: string[]): Promise<void> {
      const pipe = redis.pipeline();
      pipe.del(k.post(postId));
      for (const follower of followerIds) pipe.zrem(k.feed(follower), postId);
      await exec(pipe);
    },
    /**
     * Erasure (handlers/user-erased.ts): every key of the user (feed, live, ready, rebuild, author
     * lease), the bodies of the user's posts, and those posts in the feeds they were pushed to.
     * Idempotent: deleting what is gone again changes nothing.
     */
    async forgetUser(user: string, postIds: string[], followerIds: string[]): Promise<void> {
      const pipe = redis.pipeline();
      pipe.del(k.feed(user), k.live(user), k.ready(user), k.rebuild(user), k.author(user));
      for (let i = 0; i < postIds.length; i += 500) {
        const chunk = postIds.slice(i, i + 500);
        pipe.del(...chunk.map(k.post));
        for (const follower of followerIds) pipe.zrem(k.feed(follower), ...chunk);
      }
      await exec(pipe);
    },

    /** Unready, then drop the sorted set (an exact rebuild follows: rebuild.ts). */
    async clear(user: string): Promise<void> {
      await redis.del(k.ready(user));
      await redis.del(k.feed(user));
    },
    /**
     * Users with a materialised feed (a ready: key), SCAN-ed in pages from `cursor` ('0': the
     * start; the answer's cursor '0': the end). SCAN's MATCH does not apply keyPrefix: done here.
     */
    async scanReady(cursor: string, count: number): Promise<{ cursor: string; users: string[] }> {
      const head = `${options.prefix}ready:`;
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${head.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', count);
      return { cursor: next, users: keys.map((key) => key.slice(head.length)) };
    },
    async isReady(user: string): Promise<boolean> {
      return (await redis.exists(k.ready(user))) === 1;
    },
    async isLive(user: string): Promise<boolean> {
      return (await redis.exists(k.live(user))) === 1;
    },
    /** The reader was seen: the feed lives FEED_ACTIVE_WINDOW_DAYS from now, like their activity row. */
    async extend(user: string): Promise<void> {
      await exec(
        redis
          .pipeline()
          .pexpire(k.live(user), feedTtlMs)
          .pexpire(k.ready(user), feedTtlMs)
          .pexpire(k.feed(user), feedTtlMs),
      );
    },
    /** True for the one caller that may rebuild this feed now (others within the window read Postgres). */
    async claimRebuild(user: string, windowMs: number): Promise<boolean> {
      return (await redis.set(k.rebuild(user), '1', 'PX', windowMs, 'NX')) === 'OK';
    },
    async markLive(user: string): Promise<void> {
      await redis.set(k.live(user), '1', 'PX', feedTtlMs);
    },
    async markReady(user: string): Promise<void> {
      await exec(redis.pipeline().set(k.ready(user), '1', 'PX', feedTtlMs).pexpire(k.feed(user), feedTtlMs));
    },

    /**
     * The page of a ready feed in one round trip (feed-ready-page.lua), or `undefined` when the
     * feed is not ready. Falls back to `page()` in the rare case that more ties of the cursor's
     * millisecond than the margin hide the page.
     */
    async readyPage(user: string, cursor: FeedKey | undefined, limit: number): Promise<Page | undefined> {
      const batch = limit + 16;
      const res = await redis.readyPage(
        k.ready(user),
        k.feed(user),
        cursor ? cursor.at : '+inf',
        batch,
        `${options.prefix}p:`,
      );
      if (!res) return undefined;
      const [raw, bodies, size] = res;
      const items: FeedItem[] = [];
      const missing: FeedKey[] = [];
      for (let i = 0; i < raw.length && items.length + missing.length < limit; i += 2) {
        const key = { postId: raw[i], at: Number(raw[i + 1]) };
        if (!isAfter(key, cursor)) continue;
        const body = bodies[i / 2];
        if (body) items.push(JSON.parse(body) as FeedItem);
        else missing.push(key);
      }
      if (items.length + missing.length < limit && raw.length / 2 === batch) return page(user, cursor, limit);
      return { items, missing, size };
    },
    page,
  };
}
