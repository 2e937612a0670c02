/**
 * Fan-out on write (docs/FEED.md "Fan-out"): a post of an author with at most
 * FEED_LARGE_AUTHOR_THRESHOLD followers goes into the feeds of the author's active followers.
 *
 * plan (activity lane):  record the post → plan the job (chunk ranges, one transaction under the
 *   author's advisory lock) → take the author's lease → one chunk: write it inline; more: one
 *   message per pending chunk on feed-service.fanout, which any replica takes.
 * chunk (fan-out lane):  skip if checkpointed → the range's active followers → one pipelined Redis
 *   round trip → checkpoint (and, for the last chunk, close the job, observe the lag, release the lease).
 *
 * Crash anywhere: an unacked post.published is redelivered and re-plans nothing (the job exists), it
 * re-sends the chunks not done; a chunk message is redelivered and re-runs unless checkpointed.
 * Writing a chunk twice changes nothing (ZADD of the same member and score).
 *
 * Deadline: every handler gets the runtime's `ctx.signal` (FEED_HANDLER_TIMEOUT_MS, or a forced
 * shutdown). It is checked before every step, passed to every wait and to every transaction
 * (withTransaction cancels the running statement and never commits after the abort), so a handler
 * past its deadline stops where it is and commits nothing more: its message is already on its way
 * to a retry tier, and a late checkpoint would race that retry. What it wrote before the abort is
 * idempotent (ZADD, the post row, the plan), and the retry redoes the rest.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { withTransaction } from '@community/db';
import { TransientError, type Publisher } from '@community/messaging';
import type { FeedConfig } from '../config';
import type { FeedMetrics } from '../metrics';
import type { FeedCache } from '../redis/cache';
import * as fanout from '../store/fanout';
import * as projections from '../store/projections';
import { sendFanoutChunk } from '../handlers/internal-messages';

/** Followers seen within this margin beyond the window are still written (clock skew between Node, Postgres and Redis TTLs). */
const ACTIVE_MARGIN_MS = 3_600_000;
/** How long a post waits in its handler for the author's lease before a delayed retry, and how often it looks. */
const LEASE_WAIT_MS = 2_000;
const LEASE_POLL_MS = 5;
/** Chunk messages published at once while planning (confirms overlap; bounded memory). */
const PUBLISH_PARALLELISM = 32;
/** How often a yielding chunk writer looks whether the small lane is done (each look is a Redis call competing with the small post's own). */
const YIELD_POLL_MS = 5;

/** A wait that ends early, with the deadline's reason, when the handler's signal aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await sleep(ms, undefined, { signal }).catch((err: unknown) => {
    signal?.throwIfAborted();
    throw err;
  });
}

export interface FanoutDeps {
  pool: Pool;
  cache: FeedCache;
  metrics: FeedMetrics;
  config: FeedConfig;
  publisher?: Publisher;
  clock?: () => Date;
}

/**
 * One handler's presence in the small lane (docs/FEED.md "Lanes"): while entered, large fan-outs'
 * chunk writers on every replica pause (up to their per-chunk cap). Best effort: a Redis error
 * leaves the handler to do its work unmarked (a follow does not need Redis otherwise).
 */
export interface SmallLaneMark {
  enter(): Promise<void>;
  leave(): Promise<void>;
}

export interface PublishedPost {
  postId: string;
  authorId: string;
  title: string;
  excerpt: string;
  publishedAt: Date;
  correlationId: string;
}

export function createFanout(deps: FanoutDeps) {
  const { pool, cache, metrics, config } = deps;
  const now = deps.clock ?? (() => new Date());
  const windowMs = config.FEED_ACTIVE_WINDOW_DAYS * 86_400_000;
  const preempt = config.FEED_FANOUT_YIELD_MAX_MS > 0;

  function smallLaneMark(): SmallLaneMark {
    const holder = randomUUID();
    let held = false;
    return {
      async enter() {
        if (!preempt || held) return;
        held = true;
        await cache.enterSmallLane(holder, config.FEED_SMALL_LANE_MARK_MS).catch(() => (held = false));
      },
      async leave() {
        if (!held) return;
        held = false;
        await cache.leaveSmallLane(holder).catch(() => undefined); // its deadline passes anyway
      },
    };
  }

  /**
   * A large fan-out chunk's yield budget: `wait()` sleeps YIELD_POLL_MS and answers true while the
   * chunk may keep yielding, false once it spent FEED_FANOUT_YIELD_MAX_MS (then it writes regardless:
   * a steady stream of small posts slows a large fan-out by at most that much per chunk, never stops it).
   */
  function yieldBudget(signal?: AbortSignal) {
    let spentMs = 0;
    let pausedAt: number | undefined;
    const settle = (outcome: 'resumed' | 'capped') => {
      if (pausedAt === undefined) return;
      metrics.fanoutYield.inc({ outcome }, (performance.now() - pausedAt) / 1000);
      pausedAt = undefined;
    };
    const budget = {
      async wait(): Promise<boolean> {
        if (spentMs >= config.FEED_FANOUT_YIELD_MAX_MS) {
          settle('capped');
          return false;
        }
        pausedAt ??= performance.now();
        const step = Math.min(YIELD_POLL_MS, config.FEED_FANOUT_YIELD_MAX_MS - spentMs);
        const t = performance.now();
        await pause(step, signal);
        spentMs += performance.now() - t;
        return true;
      },
      resumed: () => settle('resumed'),
      /** Before a Postgres step of the chunk: pause while small-lane work is in flight (within the budget). Best effort: a Redis error does not fail the chunk here. */
      async gate(): Promise<void> {
        if (!preempt) return;
        while (await cache.smallLaneBusy().catch(() => false)) if (!(await budget.wait())) return;
        budget.resumed();
      },
      /** The Redis writes check the marker inside feed-push-many.lua (redis/commands), atomically. */
      pushOptions() {
        if (!preempt) return undefined;
        return {
          canYield: () => spentMs < config.FEED_FANOUT_YIELD_MAX_MS,
          wait: budget.wait,
          resumed: budget.resumed,
        };
      },
    };
    return budget;
  }

  /**
   * One chunk. `lane: 'large'` (a chunk message of a multi-chunk fan-out) yields to small-lane work
   * in flight; `'small'` (the inline one-chunk fan-out, which is the small lane) never does.
   */
  async function runChunk(
    postId: string,
    chunkNo: number,
    logger?: Logger,
    lane: 'small' | 'large' = 'large',
    signal?: AbortSignal,
  ): Promise<'processed' | 'duplicate'> {
    signal?.throwIfAborted();
    const chunk = await fanout.startChunk(pool, postId, chunkNo);
    if (!chunk) {
      metrics.chunks.inc({ outcome: 'skipped' });
      return 'duplicate';
    }
    metrics.chunksInFlight.inc();
    const budget = lane === 'large' ? yieldBudget(signal) : undefined;
    try {
      await budget?.gate();
      signal?.throwIfAborted();
      const followers = await fanout.chunkFollowers(pool, chunk.authorId, chunk, chunk.activeSince);
      const written = await cache.pushToFeeds(
        followers,
        { postId, at: chunk.publishedAt.getTime() },
        budget?.pushOptions(),
        signal,
      );
      signal?.throwIfAborted();
      await cache.extendAuthor(chunk.authorId, postId, config.FEED_AUTHOR_LEASE_MS);
      await budget?.gate();
      // With the signal, a checkpoint whose deadline passes is cancelled and rolled back, never committed.
      const finished = await withTransaction(pool, { signal }, (tx) =>
        fanout.finishChunk(tx, postId, chunkNo, written),
      );
      if (finished?.jobDone) {
        metrics.fanoutLag.observe(Math.max(0, (now().getTime() - chunk.publishedAt.getTime()) / 1000));
        await cache.releaseAuthor(chunk.authorId, postId).catch(() => undefined); // expires anyway
        logger?.debug({ postId }, 'fan-out done');
      }
      metrics.chunks.inc({ outcome: 'done' });
      return 'processed';
    } catch (err) {
      metrics.chunks.inc({ outcome: 'failed' });
      throw err;
    } finally {
      metrics.chunksInFlight.dec();
    }
  }

  /**
   * A burst of one author's posts (each a one-chunk fan-out of milliseconds) waits its turn here,
   * briefly, rather than through a delayed retry of several seconds; a long fan-out in the way
   * (many chunks) makes the wait run out, and the post is retried later.
   */
  async function acquireAuthorWithin(
    authorId: string,
    holder: string,
    waitMs: number,
    mark: SmallLaneMark,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    if (await cache.acquireAuthor(authorId, holder, config.FEED_AUTHOR_LEASE_MS)) return true;
    // Waiting is not small-lane work: large fan-outs (maybe this author's) go on meanwhile.
    await mark.leave();
    for (;;) {
      if (Date.now() >= deadline) return false;
      await pause(LEASE_POLL_MS, signal);
      if (await cache.acquireAuthor(authorId, holder, config.FEED_AUTHOR_LEASE_MS)) {
        await mark.enter();
        return true;
      }
    }
  }

  /**
   * post.published on the activity lane. The handler holds a small-lane mark from its first query
   * until the inline chunk is written (so large fan-outs yield to it), and gives it up as soon as the
   * author turns out to have more followers than one chunk (planning a large fan-out is not small work).
   */
  async function onPost(
    post: PublishedPost,
    logger?: Logger,
    signal?: AbortSignal,
  ): Promise<'processed' | 'duplicate' | 'skipped'> {
    const mark = smallLaneMark();
    await mark.enter();
    try {
      return await handlePost(post, mark, logger, signal);
    } finally {
      await mark.leave();
    }
  }

  async function handlePost(
    post: PublishedPost,
    mark: SmallLaneMark,
    logger?: Logger,
    signal?: AbortSignal,
  ): Promise<'processed' | 'duplicate' | 'skipped'> {
    const step = () => signal?.throwIfAborted();
    step();
    await projections.recordActivity(pool, post.authorId, post.publishedAt);
    step();
    const followers = await projections.followerCount(pool, post.authorId);
    if (followers > config.FEED_FANOUT_CHUNK_SIZE) await mark.leave();
    step();
    const stored = await projections.recordPost(pool, {
      ...post,
      pushed: followers <= config.FEED_LARGE_AUTHOR_THRESHOLD,
    });
    // Deleted before it was published here (post.deleted came first): nothing to fan out.
    if (stored === null) return 'skipped';
    // A large author's post is not fanned out: reads merge it in (the first recording decided).
    if (!stored.pushed) return stored.inserted ? 'skipped' : 'duplicate';
    step();
    await cache.putPosts([stored]);

    step();
    let job = await fanout.getJob(pool, post.postId);
    if (!job) {
      const activeSince = new Date(now().getTime() - windowMs - ACTIVE_MARGIN_MS);
      await withTransaction(pool, { signal }, async (tx) => {
        // Plans of one author one at a time: the lock is released at commit, or when a crashed
        // replica's connection ends.
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext('feed-author'), hashtext($1))`, [post.authorId]);
        const chunks = await fanout.planChunks(tx, post.authorId, activeSince, config.FEED_FANOUT_CHUNK_SIZE);
        await fanout.createJob(
          tx,
          { postId: post.postId, authorId: post.authorId, publishedAt: stored.publishedAt, activeSince },
          chunks,
        );
      });
      job = (await fanout.getJob(pool, post.postId))!;
    }
    if (job.doneAt) {
      if (job.chunksTotal === 0) return stored.inserted ? 'processed' : 'duplicate';
      return 'duplicate';
    }
    // Two fan-outs of one author do not interleave: the next waits (a delayed retry of its
    // post.published) until this one released the lease or the lease expired after a crash.
    step();
    if (!(await acquireAuthorWithin(post.authorId, post.postId, LEASE_WAIT_MS, mark, signal))) {
      throw new TransientError(
        `a fan-out of author '${post.authorId}' is running; post '${post.postId}' waits for it`,
        'AUTHOR_BUSY',
      );
    }
    step();
    const pending = await fanout.pendingChunks(pool, post.postId);
    if (job.chunksTotal <= 1 || !deps.publisher) {
      // The small lane: one chunk is written right here, never behind a large fan-out's chunks.
      for (const chunk of pending) await runChunk(post.postId, chunk.chunkNo, logger, 'small', signal);
      return 'processed';
    }
    const publisher = deps.publisher;
    for (let i = 0; i < pending.length; i += PUBLISH_PARALLELISM) {
      step(); // chunks not sent are sent by the retry (it finds the job and sends the pending ones)
      await Promise.all(
        pending
          .slice(i, i + PUBLISH_PARALLELISM)
          .map((c) => sendFanoutChunk(publisher, { postId: post.postId, chunkNo: c.chunkNo }, post.correlationId)),
      );
    }
    logger?.debug({ postId: post.postId, chunks: pending.length }, 'fan-out planned');
    return 'processed';
  }

  return { onPost, runChunk, smallLaneMark };
}

export type Fanout = ReturnType<typeof createFanout>;
