import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import sql, { raw } from 'sql-template-tag';
import { notifyInboxesSql, textAndValues } from './ingest';

/**
 * Recount and repair of the unread counters (docs/RECONCILER.md "Unread counters"). The SQL is
 * notification-service's, because the tables and the lock order are; the reconciler schedules it
 * (apps/reconciler/src/jobs/counters.ts, through this app's public entry) and writes its own audit
 * of each repair inside the repair's transaction (the `audit` hook).
 *
 * The per-user lock is the one the live path takes: the user's `notification_counters` row, locked
 * (FOR UPDATE, or the consumers' INSERT ... ON CONFLICT DO UPDATE) before any notification row of
 * that user is inserted or its read state changed, always in user-id order. A batch:
 *
 *   1. find (no lock, one statement, so one snapshot): the next `limit` counters after `after`, each
 *      beside a recount of its user's rows. The live path changes a counter and its rows in the same
 *      transaction, so within one snapshot they agree unless the counter drifted: the users that
 *      differ here are the candidates. Nobody waits for this read.
 *   2. only when there are candidates, one transaction:
 *      a. SELECT their counter rows ORDER BY user_id FOR UPDATE → waits for any live transaction on
 *         those users, then keeps every new one out;
 *      b. one statement (a NEW snapshot, taken after every lock is held — READ COMMITTED): recount
 *         them again, compare with the stored counters as locked, set the ones that still differ,
 *         NOTIFY their inboxes;
 *      c. the caller's audit of the repairs (one row per repair), still under the locks.
 *
 * Why lock-then-recount in two statements: in a single statement the recount would read the
 * snapshot taken when the statement started, before the lock waits; a live insert that committed
 * during the wait would be in the re-read counter (FOR UPDATE sees the newest row version) and
 * missing from the recount, and the "repair" would undo a live increment. After (a) no writer of
 * these users can commit until we do, so (b)'s recount and the stored value describe the same state.
 * A candidate that a live write changed between 1 and 2 is simply found consistent in (b).
 *
 * Only drifted users are ever locked, in the live path's order (user id ascending), so a batch and a
 * consumer's batch never wait on each other in a cycle, and a live write waits at most for one
 * batch's repair (measured by `npm run bench:reconcile`).
 */

export interface Drift {
  userId: string;
  stored: number;
  recounted: number;
}

export interface CounterBatch {
  /** Users locked and recounted. */
  checked: number;
  /** The last user id of the batch (the next batch starts after it); null when none was left. */
  last: string | null;
  drifts: Drift[];
}

export interface CounterBatchOptions {
  /** Start after this user id ('' for the first). */
  after: string;
  limit: number;
  /** Only users whose counter row changed within this many ms (the incremental recount). */
  recentMs?: number;
  /** Only users up to this id, inclusive (a range of the low-priority queue). */
  through?: string;
  /** Only these users (an operator's request). */
  userIds?: readonly string[];
  /** Report the drift, change nothing (and call no `audit`). */
  dryRun: boolean;
  /**
   * Called with the repairs of the batch inside its transaction, under the counter locks, when it
   * repaired any: an audit written here commits (or is lost) with the repairs it describes.
   */
  audit?: (tx: PoolClient, repaired: readonly Drift[]) => Promise<void>;
}

/** One batch: find the candidates, then lock, recount, compare, set and audit them (see the header). */
export async function recountCounterBatch(pool: Pool, opts: CounterBatchOptions): Promise<CounterBatch> {
  const found = await findCandidates(pool, opts);
  if (found.last === null) return { checked: 0, last: null, drifts: [] };
  if (found.candidates.length === 0) return { checked: found.checked, last: found.last, drifts: [] };
  // Asynchronous commit: a repair lost to a crash of PostgreSQL in the next ~600 ms is lost with
  // its audit row (same transaction), and the next sweep finds and repairs the counter again; any
  // live write committed after it flushes it along. Waiting for the disk per batch was half the
  // sweep's time (npm run bench:reconcile).
  const drifts = await withTransaction(pool, { synchronousCommit: false }, async (tx) => {
    const locked = await lockUsers(tx, found.candidates);
    if (locked.length === 0) return [];
    const drifted = await repairLocked(tx, locked, opts.dryRun);
    if (!opts.dryRun && drifted.length > 0) await opts.audit?.(tx, drifted);
    return drifted;
  });
  return { checked: found.checked, last: found.last, drifts };
}

/**
 * Step 1: the next batch of counters beside their recount, in ONE statement (one snapshot: a live
 * change is either in both the counter and the rows or in neither), without locks. The rows are
 * read by the batch's id range, one index range scan in id order (grouped without a sort): far
 * cheaper than a lookup per id. A batch chosen by filters (recent users, given users) is a few ids
 * spread over a wide range, so those are counted by id instead.
 */
async function findCandidates(
  pool: Pool,
  opts: CounterBatchOptions,
): Promise<{ checked: number; last: string | null; candidates: string[] }> {
  const byRange = opts.recentMs === undefined && opts.userIds === undefined;
  const counted = byRange
    ? `SELECT user_id, count(*)::int AS unread FROM notification_items
        WHERE user_id >= (SELECT min(user_id) FROM batch) AND user_id <= (SELECT max(user_id) FROM batch) AND in_app AND item_head AND item_unread
        GROUP BY user_id`
    : `SELECT user_id, count(*)::int AS unread FROM notification_items
        WHERE user_id IN (SELECT user_id FROM batch) AND in_app AND item_head AND item_unread
        GROUP BY user_id`;
  const res = await pool.query<{ checked: number; last: string | null; candidates: string[] | null }>({
    name: byRange ? 'ns-repair-find-range' : 'ns-repair-find-ids',
    text: `WITH batch AS MATERIALIZED (
             SELECT user_id, unread_count FROM notification_counters
              WHERE user_id > $1
                AND ($3::float8 IS NULL OR updated_at > now() - $3::float8 * interval '1 millisecond')
                AND ($4::text[] IS NULL OR user_id = ANY($4::text[]))
                AND ($5::text IS NULL OR user_id <= $5::text)
              ORDER BY user_id LIMIT $2
           ), counted AS (${counted})
           SELECT count(*)::int AS checked, max(b.user_id) AS last,
                  array_agg(b.user_id ORDER BY b.user_id) FILTER (WHERE b.unread_count <> coalesce(c.unread, 0)) AS candidates
             FROM batch b LEFT JOIN counted c ON c.user_id = b.user_id`,
    values: [
      opts.after,
      opts.limit,
      opts.recentMs ?? null,
      opts.userIds ? [...opts.userIds] : null,
      opts.through ?? null,
    ],
  });
  const r = res.rows[0];
  return { checked: r.checked, last: r.last, candidates: r.candidates ?? [] };
}

/** Step 2a: the candidates' counter rows, locked in user-id order, with their stored counts as of the lock. */
async function lockUsers(tx: PoolClient, userIds: string[]): Promise<{ userId: string; stored: number }[]> {
  const res = await tx.query<{ user_id: string; unread_count: number }>({
    name: 'ns-repair-lock',
    text: 'SELECT user_id, unread_count FROM notification_counters WHERE user_id = ANY($1::text[]) ORDER BY user_id FOR UPDATE',
    values: [userIds],
  });
  return res.rows.map((r) => ({ userId: r.user_id, stored: r.unread_count }));
}

/** Step 2b: recount the locked users, set the counters that still differ and announce their inboxes. */
async function repairLocked(
  tx: PoolClient,
  locked: { userId: string; stored: number }[],
  dryRun: boolean,
): Promise<Drift[]> {
  const res = await tx.query<{ user_id: string; stored: number; recounted: number }>({
    name: 'ns-repair-set',
    ...textAndValues(sql`WITH actual AS (
             SELECT u.user_id, u.stored, coalesce(n.unread, 0) AS recounted
               FROM unnest(${locked.map((l) => l.userId)}::text[], ${locked.map((l) => l.stored)}::int[]) AS u(user_id, stored)
               CROSS JOIN LATERAL (
                 SELECT count(*)::int AS unread FROM notification_items i WHERE i.user_id = u.user_id AND i.in_app AND i.item_head AND i.item_unread
               ) n
           ), drifted AS (
             SELECT user_id, stored, recounted FROM actual WHERE stored <> recounted
           ), repaired AS (
             -- A repair is a change of the inbox like any other: a new version, so SSE streams and
             -- clients that cache by version see it.
             UPDATE notification_counters c
                SET unread_count = d.recounted, version = c.version + 1, updated_at = now()
               FROM drifted d
              WHERE c.user_id = d.user_id AND NOT ${dryRun}::bool
             RETURNING c.user_id
           ), notified AS (
             ${notifyInboxesSql(raw('repaired'))}
           )
           SELECT d.user_id, d.stored, d.recounted
             FROM drifted d, (SELECT count(*) FROM notified) AS n
            ORDER BY d.user_id`),
  });
  return res.rows.map((r) => ({ userId: r.user_id, stored: r.stored, recounted: r.recounted }));
}

/** The last user id of every `size` users in id order (and the very last): the ranges of a full recount. */
export async function counterBatchBoundaries(pool: Pool, size: number): Promise<string[]> {
  const res = await pool.query<{ user_id: string }>(
    `SELECT user_id FROM (
       SELECT user_id, row_number() OVER (ORDER BY user_id) AS rn, count(*) OVER () AS total FROM notification_counters
     ) t WHERE rn % $1 = 0 OR rn = total ORDER BY user_id`,
    [size],
  );
  return res.rows.map((r) => r.user_id);
}
