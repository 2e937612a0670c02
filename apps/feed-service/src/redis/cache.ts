/**
 * The Redis side of the feed: a cache of the Postgres projections, never the truth (docs/FEED.md).
 *
 * Keys (all under the configured prefix, ioredis `keyPrefix`):
 *   f:<user>        sorted set of post ids scored by publishedAt (ms), capped at FEED_CAP
 *   live:<user>     fan-out may write this feed (set before a rebuild reads Postgres)
 *   ready:<user>    reads may trust this feed (set after a rebuild wrote it)
 *   rebuild:<user>  collapses rebuilds of one feed within a window (SET NX PX)
 *   p:<post>        the item body (JSON), one per post, shared by every feed (MGET for a page)
 *   author:<id>     the per-author fan-out lease (SET NX PX, extended by each chunk, released at the end)
 *   lane:small      small-lane work in flight: a sorted set of holders scored by their deadline (Redis
 *                   TIME, ms); large fan-outs' chunk writers yield while any deadline is in the future
 * live, ready and f: expire together, FEED_ACTIVE_WINDOW_DAYS after the reader's last activity:
 * an inactive user's feed disappears and fan-out stops writing it (the Lua guard on live:).
 */
import Redis from 'ioredis';
import type { Logger } from 'pino';
import type { FeedMetrics } from '../metrics';
import type { PostRow } from '../store/projections';
import { isAfter, type FeedKey } from '../domain/cursor';

/**
 * Pushes one post into one feed if the feed is live: ZADD (same member, same score: no change),
 * trim to the cap, and give a feed the live key's expiry if it has none. One script call per
 * follower keeps the guard and the write atomic, and pipelines like a plain command.
 */
const PUSH = `
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 then return 0 end
local cap = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1]) end
local n = redis.call('ZCARD', KEYS[1])
if n > cap then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - cap - 1) end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

/**
 * One post into many feeds (a fan-out chunk) in one call: KEYS[1] is the small-lane marker, then
 * feed, live pairs. The loop runs in Redis (about a millisecond for a thousand feeds), so a chunk
 * costs this process one small command instead of building and parsing a pipeline of a thousand,
 * which is what lets a small post's fan-out run beside a large one without waiting for the event
 * loop (docs/FEED.md "Lanes"). ARGV[4] = 1: yield to the small lane, i.e. write nothing and return
 * -1 while a small-lane holder's deadline is in the future (checked atomically with the write).
 */
const PUSH_MANY = `
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  if redis.call('ZCOUNT', KEYS[1], '(' .. (t[1] * 1000 + math.floor(t[2] / 1000)), '+inf') > 0 then return -1 end
end
local cap = tonumber(ARGV[3])
local written = 0
for i = 2, #KEYS, 2 do
  local ttl = redis.call('PTTL', KEYS[i + 1])
  if ttl > 0 then
    redis.call('ZADD', KEYS[i], ARGV[1], ARGV[2])
    local n = redis.call('ZCARD', KEYS[i])
    if n > cap then redis.call('ZREMRANGEBYRANK', KEYS[i], 0, n - cap - 1) end
    if redis.call('PTTL', KEYS[i]) == -1 then redis.call('PEXPIRE', KEYS[i], ttl) end
    written = written + 1
  end
end
return written`;

/**
 * The small-lane marker (docs/FEED.md "Lanes"): a holder enters with a deadline of now + ttl (Redis
 * TIME, one clock for every replica), expired holders are dropped, and the key lives as long as its
 * latest deadline. A holder that crashes without leaving stops counting at its deadline.
 */
const LANE_ENTER = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;
const LANE_BUSY = `
local t = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], '(' .. (t[1] * 1000 + math.floor(t[2] / 1000)), '+inf')`;

/**
 * A hit in one round trip: nil unless ready:<user> exists, else the page's ids and scores from the
 * cursor's score down, their bodies and the feed's size. Body keys are built from ARGV (the prefix
 * is not applied to them): fine on a single Redis, which is what this service uses.
 */
const READY_PAGE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local r = redis.call('ZRANGE', KEYS[2], ARGV[1], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(ARGV[2]), 'WITHSCORES')
local bodies = {}
if #r > 0 then
  local keys = {}
  for i = 1, #r, 2 do keys[#keys + 1] = ARGV[3] .. r[i] end
  bodies = redis.call('MGET', unpack(keys))
  for i = 1, #bodies do if not bodies[i] then bodies[i] = '' end end
end
return {r, bodies, redis.call('ZCARD', KEYS[2])}`;

/** Feeds written per PUSH_MANY call: bounds how long one call holds Redis (~0.5 ms), so a small post's commands interleave. */
const PUSH_MANY_BATCH = 250;

/** Compare-and-delete / compare-and-extend of the author lease (only its holder may). */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

interface FeedCommands {
  feedPush(feed: string, live: string, cap: number, ...scoreMembers: Array<string | number>): Promise<number>;
  feedPushMany(numberOfKeys: number, ...keysThenArgs: Array<string | number>): Promise<number>;
  readyPage(ready: string, feed: string, max: string | number, count: number, bodyPrefix: string): Promise<[string[], string[], number] | null>;
  leaseRelease(key: string, holder: string): Promise<number>;
  leaseExtend(key: string, holder: string, ms: number): Promise<number>;
  laneEnter(key: string, holder: string, ttlMs: number): Promise<number>;
  laneBusy(key: string): Promise<number>;
}
type FeedRedis = Redis & FeedCommands;
type Pipe = ReturnType<Redis['pipeline']> & { feedPush(feed: string, live: string, cap: number, ...scoreMembers: Array<string | number>): Pipe };

export interface FeedItem extends FeedKey {
  authorId: string;
  title: string;
  excerpt: string;
  publishedAt: string;
}

export function toItem(post: PostRow): FeedItem {
  const publishedAt = post.publishedAt.toISOString();
  return { postId: post.postId, authorId: post.authorId, title: post.title, excerpt: post.excerpt, publishedAt, at: post.publishedAt.getTime() };
}

export interface FeedCacheOptions {
  url: string;
  prefix: string;
  cap: number;
  /** Lifetime of a feed after its reader's last activity (the active window). */
  feedTtlMs: number;
  logger: Logger;
  /** Only its Redis error counter (the reconciler passes its own). */
  metrics: Pick<FeedMetrics, 'redisErrors'>;
}

export type FeedCache = ReturnType<typeof createFeedCache>;

export function createFeedCache(options: FeedCacheOptions) {
  const { cap, feedTtlMs, logger, metrics } = options;
  const client = () => {
    const c = new Redis(options.url, {
      keyPrefix: options.prefix,
      lazyConnect: true,
      // Fail at once while disconnected: the API answers from Postgres instead of waiting, and a
      // handler's transient error goes to a retry tier (docs/FEED.md "Redis down").
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
    }) as FeedRedis;
    c.defineCommand('feedPush', { numberOfKeys: 2, lua: PUSH });
    c.defineCommand('feedPushMany', { lua: PUSH_MANY });
    c.defineCommand('readyPage', { numberOfKeys: 2, lua: READY_PAGE });
    c.defineCommand('leaseRelease', { numberOfKeys: 1, lua: RELEASE });
    c.defineCommand('leaseExtend', { numberOfKeys: 1, lua: EXTEND });
    c.defineCommand('laneEnter', { numberOfKeys: 1, lua: LANE_ENTER });
    c.defineCommand('laneBusy', { numberOfKeys: 1, lua: LANE_BUSY });
    return c;
  };
  // Two connections: `redis` for reads and small writes, `bulk` for fan-out chunks only. Replies on
  // one connection come back in order, so on a shared socket a feed read or a small post's write
  // waits behind every chunk call queued before it; on its own socket it waits at most for the one
  // script Redis is running (docs/FEED.md "Lanes").
  const redis = client();
  const bulk = client();
  // Without a listener an 'error' event would crash the process; Redis being down is a state the
  // service serves through (from Postgres), logged once per outage rather than once per retry.
  let down = false;
  redis.on('error', (err: Error) => {
    metrics.redisErrors.inc();
    if (!down) logger.warn({ err: err.message }, 'redis unavailable: feeds are read from Postgres until it returns');
    down = true;
  });
  redis.on('ready', () => {
    if (down) logger.info('redis available again');
    down = false;
  });
  bulk.on('error', () => metrics.redisErrors.inc()); // logged once by the main connection's listener

  const k = {
    feed: (u: string) => `f:${u}`,
    live: (u: string) => `live:${u}`,
    ready: (u: string) => `ready:${u}`,
    rebuild: (u: string) => `rebuild:${u}`,
    post: (p: string) => `p:${p}`,
    author: (a: string) => `author:${a}`,
    smallLane: 'lane:small',
  };

  async function exec(pipe: Pipe | ReturnType<Redis['pipeline']>): Promise<unknown[]> {
    const results = (await pipe.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed) throw failed[0];
    return results.map(([, value]) => value);
  }

  return {
    redis,
    keys: k,
    async connect(): Promise<void> {
      // A Redis that is down at start is not fatal: the client keeps retrying and reads fall back.
      await Promise.all([
        redis.connect().catch((err: Error) => logger.warn({ err: err.message }, 'redis not reachable at start')),
        bulk.connect().catch(() => undefined),
      ]);
    },
    async close(): Promise<void> {
      redis.disconnect();
      bulk.disconnect();
    },
    available(): boolean {
      return redis.status === 'ready';
    },

    /** Item bodies, one key per post (written before any feed references the post). */
    async putPosts(posts: PostRow[]): Promise<void> {
      if (posts.length === 0) return;
      const pipe = redis.pipeline();
      for (const p of posts) pipe.set(k.post(p.postId), JSON.stringify(toItem(p)), 'PX', feedTtlMs);
      await exec(pipe);
    },

    /**
     * One post into many feeds (a fan-out chunk): one script call per PUSH_MANY_BATCH feeds, on the
     * bulk connection. Returns feeds written. With `yieldTo`, a batch finding small-lane work in
     * flight writes nothing; `yieldTo.wait()` is awaited (it sleeps, or returns false once the
     * chunk's yield budget is spent) and the batch is retried, writing regardless once it is false
     * (`canYield()`: budget left, so a capped chunk does not ask again). With `signal`, no batch is
     * sent after it aborted (the handler's deadline): the chunk stops between batches.
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

    /** Small-lane work in flight (a holder whose deadline has not passed): large fan-outs yield (docs/FEED.md "Lanes"). */
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

    /** Many posts into one feed (a rebuild, a backfill), if it is live. */
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
      await exec(redis.pipeline().pexpire(k.live(user), feedTtlMs).pexpire(k.ready(user), feedTtlMs).pexpire(k.feed(user), feedTtlMs));
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
     * The page of a ready feed in one round trip (READY_PAGE), or `undefined` when the feed is not
     * ready. Falls back to `page()` in the rare case that more ties of the cursor's millisecond than
     * the margin hide the page.
     */
    async readyPage(user: string, cursor: FeedKey | undefined, limit: number): Promise<{ items: FeedItem[]; missing: FeedKey[]; size: number } | undefined> {
      const batch = limit + 16;
      const res = await redis.readyPage(k.ready(user), k.feed(user), cursor ? cursor.at : '+inf', batch, `${options.prefix}p:`);
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
      if (items.length + missing.length < limit && raw.length / 2 === batch) return this.page(user, cursor, limit);
      return { items, missing, size };
    },

    /**
     * One page of the materialised feed after `cursor`: ids and scores by ZRANGE BYSCORE REV from
     * the cursor's score, skipping its ties that sort before it, then the bodies by MGET. Bodies
     * missing (evicted, flushed) come back as ids for the caller to load from Postgres.
     */
    async page(user: string, cursor: FeedKey | undefined, limit: number): Promise<{ items: FeedItem[]; missing: FeedKey[]; size: number }> {
      const keys: FeedKey[] = [];
      let offset = 0;
      const batch = limit + 16;
      for (;;) {
        const raw = await redis.zrange(k.feed(user), cursor ? cursor.at : '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', offset, batch, 'WITHSCORES');
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
    },

    /** The per-author fan-out lease: SET NX PX; only its holder extends or releases it. */
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
