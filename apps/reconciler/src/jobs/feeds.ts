import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { ScheduledJob } from '@community/db';
import { diffFeed, expectedFeed, rebuildFeed, type FeedCache, type FeedEntry } from '@community/feed-service';
import type { ReconcilerMetrics } from '../metrics';
import { readCursor, saveCursor } from '../store/counters';

export const FEED_CHECK_JOB = 'feeds.check';

/** Feeds listed in an answer (the counts cover all). */
const FEEDS_SHOWN = 100;
/** Keys asked of Redis per SCAN step. */
const SCAN_COUNT = 500;

export interface FeedResult {
  userId: string;
  missing: FeedEntry[];
  extra: FeedEntry[];
  rebuilt: boolean;
}

export interface FeedRunSummary {
  checked: number;
  mismatched: number;
  rebuilt: number;
  [name: string]: number;
}

export interface FeedCheckerDeps {
  pool: Pool;
  cache: FeedCache;
  cap: number;
  settleMs: number;
  sample: number;
  metrics: ReconcilerMetrics;
  logger: Logger;
  clock: () => Date;
}

/**
 * The reconciler's side of feed-service's Redis (docs/RECONCILER.md "Feed caches"): compare a
 * materialised feed with what the projections say it should hold (feed-service's own expectedFeed),
 * and rebuild it exactly (feed-service's own rebuildFeed, after clearing it) when it differs.
 */
export function createFeedChecker(d: FeedCheckerDeps) {
  async function checkOne(userId: string, o: { dryRun: boolean; force: boolean; source: string }): Promise<FeedResult> {
    const [expected, actual] = await Promise.all([expectedFeed(d.pool, userId, d.cap), d.cache.entries(userId)]);
    const { missing, extra } = diffFeed(expected, actual, d.clock().getTime() - d.settleMs);
    const differs = missing.length + extra.length > 0;
    d.metrics.feedsChecked.inc({ source: o.source });
    if (differs) d.metrics.feedsMismatched.inc({ source: o.source });
    let rebuilt = false;
    if ((differs || o.force) && !o.dryRun) {
      await rebuildFeed({ pool: d.pool, cache: d.cache, cap: d.cap }, userId, { exact: true });
      d.metrics.feedsRebuilt.inc({ source: o.source });
      rebuilt = true;
      if (differs)
        d.logger.warn(
          { userId, missing: missing.length, extra: extra.length },
          'feed cache differed from the projections: rebuilt',
        );
    }
    return { userId, missing, extra, rebuilt };
  }

  /** Walks the ready: keys from `cursor`, checking each feed, until `limit` feeds or the end. */
  async function walk(
    cursor: string,
    limit: number,
    o: { dryRun: boolean; force: boolean; source: string; signal?: AbortSignal },
    summary: FeedRunSummary,
    shown: FeedResult[],
  ): Promise<string> {
    const seen = new Set<string>(); // SCAN may return a key twice
    do {
      o.signal?.throwIfAborted();
      const page = await d.cache.scanReady(cursor, SCAN_COUNT);
      cursor = page.cursor;
      for (const userId of page.users) {
        if (seen.has(userId)) continue;
        seen.add(userId);
        const r = await checkOne(userId, o);
        summary.checked += 1;
        if (r.missing.length + r.extra.length > 0) summary.mismatched += 1;
        if (r.rebuilt) summary.rebuilt += 1;
        if ((r.rebuilt || r.missing.length + r.extra.length > 0) && shown.length < FEEDS_SHOWN) shown.push(r);
      }
    } while (cursor !== '0' && summary.checked < limit);
    return cursor;
  }

  const job: ScheduledJob = {
    name: FEED_CHECK_JOB,
    intervalMs: 0, // set by the caller
    run: async ({ pool, signal, dryRun }) => {
      const summary: FeedRunSummary = { checked: 0, mismatched: 0, rebuilt: 0 };
      // The sample continues where the last run stopped, so every feed is checked in turn.
      const from = (await readCursor(pool, FEED_CHECK_JOB)) || '0';
      const next = await walk(from, d.sample, { dryRun, force: false, source: 'job', signal }, summary, []);
      if (!dryRun) await saveCursor(pool, FEED_CHECK_JOB, next === '0' ? '' : next);
      return summary;
    },
  };

  return {
    job: (intervalMs: number): ScheduledJob => ({ ...job, intervalMs }),
    /**
     * On demand (POST /v1/admin/feeds/rebuild): one user's feed, rebuilt whether or not it differs
     * (a feed that is not materialised becomes so), or every materialised feed.
     */
    async rebuild(req: {
      userId?: string;
      all?: boolean;
      dryRun: boolean;
    }): Promise<{ checked: number; mismatched: number; rebuilt: number; feeds: FeedResult[] }> {
      const summary: FeedRunSummary = { checked: 0, mismatched: 0, rebuilt: 0 };
      const shown: FeedResult[] = [];
      if (req.userId !== undefined) {
        const r = await checkOne(req.userId, { dryRun: req.dryRun, force: true, source: 'api' });
        summary.checked = 1;
        summary.mismatched = r.missing.length + r.extra.length > 0 ? 1 : 0;
        summary.rebuilt = r.rebuilt ? 1 : 0;
        shown.push(r);
      } else {
        await walk('0', Number.POSITIVE_INFINITY, { dryRun: req.dryRun, force: true, source: 'api' }, summary, shown);
      }
      return { ...summary, feeds: shown };
    },
  };
}

export type FeedChecker = ReturnType<typeof createFeedChecker>;
