import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';

/**
 * Recount and repair of notification-service's unread counters (docs/RECONCILER.md "Unread counters").
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
 *         write one audit row per repair, NOTIFY their inboxes.
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

/** Same channel notification-service's SSE hub listens on (apps/notification-service/src/store/ingest.ts INBOX_CHANNEL). */
const INBOX_CHANNEL = 'notification_inbox';
/** The Postgres NOTIFY payload limit is 8000 bytes; ids are chunked well below it. */
const NOTIFY_CHUNK_BYTES = 3500;

export interface Drift {
  userId: string;
  stored: number;
  recounted: number;
}

export interface BatchResult {
  /** Users locked and recounted. */
  checked: number;
  /** The last user id of the batch (the next batch starts after it); null when none was left. */
  last: string | null;
  drifts: Drift[];
}

export interface BatchOptions {
  /** Start after this user id ('' for the first). */
  after: string;
  limit: number;
  /** Only users whose counter row changed within this many ms (the incremental recount). */
  recentMs?: number;
  /** Only users up to this id, inclusive (a range of the low-priority queue). */
  through?: string;
  /** Only these users (an operator's request). */
  userIds?: readonly string[];
  /** Report the drift, change nothing, audit nothing. */
  dryRun: boolean;
  /** Recorded on every audit row. */
  source: string;
  runId?: string | null;
}

/** One batch: find the candidates, then lock, recount, compare, set and audit them (see the header). */
export async function recountBatch(pool: Pool, opts: BatchOptions): Promise<BatchResult> {
  const found = await findCandidates(pool, opts);
  if (found.last === null) return { checked: 0, last: null, drifts: [] };
  if (found.candidates.length === 0) return { checked: found.checked, last: found.last, drifts: [] };
  // Asynchronous commit: a repair lost to a crash of PostgreSQL in the next ~600 ms is lost with
  // its audit row (same transaction), and the next sweep finds and repairs the counter again; any
  // live write committed after it flushes it along. Waiting for the disk per batch was half the
  // sweep's time (npm run bench:reconcile).
  const drifts = await withTransaction(pool, { synchronousCommit: false }, async (tx) => {
    const locked = await lockUsers(tx, found.candidates);
    return locked.length === 0 ? [] : repairLocked(tx, locked, opts);
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
  opts: BatchOptions,
): Promise<{ checked: number; last: string | null; candidates: string[] }> {
  const byRange = opts.recentMs === undefined && opts.userIds === undefined;
  const counted = byRange
    ? `SELECT user_id, count(*)::int AS unread FROM notification_items
        WHERE user_id >= (SELECT min(user_id) FROM batch) AND user_id <= (SELECT max(user_id) FROM batch) AND in_app AND read_at IS NULL
        GROUP BY user_id`
    : `SELECT user_id, count(*)::int AS unread FROM notification_items
        WHERE user_id IN (SELECT user_id FROM batch) AND in_app AND read_at IS NULL
        GROUP BY user_id`;
  const res = await pool.query<{ checked: number; last: string | null; candidates: string[] | null }>({
    name: byRange ? 'rc-find-candidates-range' : 'rc-find-candidates-ids',
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
    name: 'rc-lock-counters',
    text: 'SELECT user_id, unread_count FROM notification_counters WHERE user_id = ANY($1::text[]) ORDER BY user_id FOR UPDATE',
    values: [userIds],
  });
  return res.rows.map((r) => ({ userId: r.user_id, stored: r.unread_count }));
}

async function repairLocked(
  tx: PoolClient,
  locked: { userId: string; stored: number }[],
  opts: BatchOptions,
): Promise<Drift[]> {
  const userIds = locked.map((l) => l.userId);
  const res = await tx.query<{ user_id: string; stored: number; recounted: number }>({
    name: 'rc-repair-counters',
    text: `WITH actual AS (
             SELECT u.user_id, u.stored, coalesce(n.unread, 0) AS recounted
               FROM unnest($1::text[], $7::int[]) AS u(user_id, stored)
               CROSS JOIN LATERAL (
                 SELECT count(*)::int AS unread FROM notification_items i WHERE i.user_id = u.user_id AND i.in_app AND i.read_at IS NULL
               ) n
           ), drifted AS (
             SELECT user_id, stored, recounted FROM actual WHERE stored <> recounted
           ), repaired AS (
             -- A repair is a change of the inbox like any other: a new version, so SSE streams and
             -- clients that cache by version see it.
             UPDATE notification_counters c
                SET unread_count = d.recounted, version = c.version + 1, updated_at = now()
               FROM drifted d
              WHERE c.user_id = d.user_id AND NOT $2::bool
             RETURNING c.user_id
           ), audited AS (
             INSERT INTO counter_repairs (user_id, stored, recounted, source, run_id)
             SELECT d.user_id, d.stored, d.recounted, $3, $4::bigint FROM drifted d JOIN repaired r ON r.user_id = d.user_id
             RETURNING 1
           ), notified AS (
             SELECT pg_notify($5, json_agg(user_id)::text) FROM (
               SELECT user_id, sum(2 * octet_length(user_id) + 4) OVER (ORDER BY user_id) / $6 AS chunk FROM repaired
             ) chunks GROUP BY chunk
           )
           SELECT d.user_id, d.stored, d.recounted
             FROM drifted d, (SELECT count(*) FROM audited) AS a, (SELECT count(*) FROM notified) AS n
            ORDER BY d.user_id`,
    values: [
      userIds,
      opts.dryRun,
      opts.source,
      opts.runId ?? null,
      INBOX_CHANNEL,
      NOTIFY_CHUNK_BYTES,
      locked.map((l) => l.stored),
    ],
  });
  return res.rows.map((r) => ({ userId: r.user_id, stored: r.stored, recounted: r.recounted }));
}

/** Where a sweep stopped ('' when it should start from the first user). */
export async function readCursor(pool: Pool, job: string): Promise<string> {
  const res = await pool.query<{ cursor: string }>('SELECT cursor FROM reconciler_cursors WHERE job = $1', [job]);
  return res.rows[0]?.cursor ?? '';
}

export async function saveCursor(pool: Pool, job: string, cursor: string): Promise<void> {
  await pool.query(
    `INSERT INTO reconciler_cursors (job, cursor) VALUES ($1, $2)
     ON CONFLICT (job) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = now()`,
    [job, cursor],
  );
}

export interface AuditRow {
  userId: string;
  stored: number;
  recounted: number;
  source: string;
  runId: string | null;
  repairedAt: string;
}

export async function repairsOf(pool: Pool, userId: string, limit = 20): Promise<AuditRow[]> {
  const res = await pool.query<{
    user_id: string;
    stored: number;
    recounted: number;
    source: string;
    run_id: string | null;
    repaired_at: Date;
  }>(
    'SELECT user_id, stored, recounted, source, run_id::text, repaired_at FROM counter_repairs WHERE user_id = $1 ORDER BY repaired_at DESC, id DESC LIMIT $2',
    [userId, limit],
  );
  return res.rows.map((r) => ({
    userId: r.user_id,
    stored: r.stored,
    recounted: r.recounted,
    source: r.source,
    runId: r.run_id,
    repairedAt: r.repaired_at.toISOString(),
  }));
}

/** The last drift recorded by a recount job (its run's counts), for the status checklist. */
export async function lastRecount(
  pool: Pool,
  jobs: readonly string[],
): Promise<{ job: string; finishedAt: string; drifted: number } | null> {
  const res = await pool.query<{ job: string; finished_at: Date; drifted: string | null }>(
    `SELECT job, finished_at, counts->>'drifted' AS drifted FROM scheduled_job_runs
      WHERE job = ANY($1::text[]) AND outcome = 'succeeded' AND NOT coalesce((counts->>'dry_run')::int = 1, false)
      ORDER BY finished_at DESC LIMIT 1`,
    [[...jobs]],
  );
  const r = res.rows[0];
  return r ? { job: r.job, finishedAt: r.finished_at.toISOString(), drifted: Number(r.drifted ?? 0) } : null;
}

/** The last user id of every `size` users in id order (and the very last): the ranges of a full recount. */
export async function batchBoundaries(pool: Pool, size: number): Promise<string[]> {
  const res = await pool.query<{ user_id: string }>(
    `SELECT user_id FROM (
       SELECT user_id, row_number() OVER (ORDER BY user_id) AS rn, count(*) OVER () AS total FROM notification_counters
     ) t WHERE rn % $1 = 0 OR rn = total ORDER BY user_id`,
    [size],
  );
  return res.rows.map((r) => r.user_id);
}
