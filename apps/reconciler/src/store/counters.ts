import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';

/**
 * Recount and repair of notification-service's unread counters (docs/RECONCILER.md "Unread counters").
 *
 * The per-user lock is the one the live path takes: the user's `notification_counters` row, locked
 * (FOR UPDATE, or the consumers' INSERT ... ON CONFLICT DO UPDATE) before any notification row of
 * that user is inserted or its read state changed, always in user-id order. A batch here:
 *
 *   BEGIN
 *   1. SELECT the next `limit` counter rows after `after` ORDER BY user_id FOR UPDATE
 *        → waits for any live transaction on those users, then keeps every new one out;
 *   2. one statement (a NEW snapshot, taken after every lock is held — READ COMMITTED): recount the
 *      locked users' unread in-app rows, compare with the stored counters, set the drifted ones,
 *      write one audit row per repair, NOTIFY their inboxes;
 *   COMMIT
 *
 * Why two statements: in a single statement the recount would read the snapshot taken when the
 * statement started, before the lock waits; a live insert that committed during the wait would
 * be in the re-read counter (FOR UPDATE sees the newest row version) and missing from the recount,
 * and the "repair" would undo a live increment. After step 1 no writer of these users can commit
 * until we do, so step 2's recount and the stored value describe the same state.
 *
 * Lock order is the live path's (user id ascending), so a batch and a consumer's batch never wait
 * on each other in a cycle; a live write waits at most for one batch (measured by
 * `npm run bench:reconcile`).
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

/** One batch: lock, recount, compare, set and audit, in one transaction (see the header). */
export async function recountBatch(pool: Pool, opts: BatchOptions): Promise<BatchResult> {
  return withTransaction(pool, async (tx) => {
    const locked = await lockBatch(tx, opts);
    if (locked.length === 0) return { checked: 0, last: null, drifts: [] };
    const drifts = await repairLocked(tx, locked, opts);
    return { checked: locked.length, last: locked[locked.length - 1], drifts };
  });
}

async function lockBatch(tx: PoolClient, opts: BatchOptions): Promise<string[]> {
  const res = await tx.query<{ user_id: string }>({
    name: 'rc-lock-counters',
    text: `SELECT user_id FROM notification_counters
            WHERE user_id > $1
              AND ($3::float8 IS NULL OR updated_at > now() - $3::float8 * interval '1 millisecond')
              AND ($4::text[] IS NULL OR user_id = ANY($4::text[]))
              AND ($5::text IS NULL OR user_id <= $5::text)
            ORDER BY user_id LIMIT $2
            FOR UPDATE`,
    values: [opts.after, opts.limit, opts.recentMs ?? null, opts.userIds ? [...opts.userIds] : null, opts.through ?? null],
  });
  return res.rows.map((r) => r.user_id);
}

async function repairLocked(tx: PoolClient, userIds: string[], opts: BatchOptions): Promise<Drift[]> {
  const res = await tx.query<{ user_id: string; stored: number; recounted: number }>({
    name: 'rc-repair-counters',
    text: `WITH actual AS (
             SELECT u.user_id, coalesce(n.unread, 0) AS recounted
               FROM unnest($1::text[]) AS u(user_id)
               LEFT JOIN (
                 SELECT user_id, count(*)::int AS unread FROM notification_items
                  WHERE user_id = ANY($1::text[]) AND in_app AND read_at IS NULL
                  GROUP BY user_id
               ) n ON n.user_id = u.user_id
           ), drifted AS (
             SELECT c.user_id, c.unread_count AS stored, a.recounted
               FROM notification_counters c JOIN actual a ON a.user_id = c.user_id
              WHERE c.unread_count <> a.recounted
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
    values: [userIds, opts.dryRun, opts.source, opts.runId ?? null, INBOX_CHANNEL, NOTIFY_CHUNK_BYTES],
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
  const res = await pool.query<{ user_id: string; stored: number; recounted: number; source: string; run_id: string | null; repaired_at: Date }>(
    'SELECT user_id, stored, recounted, source, run_id::text, repaired_at FROM counter_repairs WHERE user_id = $1 ORDER BY repaired_at DESC, id DESC LIMIT $2',
    [userId, limit],
  );
  return res.rows.map((r) => ({ userId: r.user_id, stored: r.stored, recounted: r.recounted, source: r.source, runId: r.run_id, repairedAt: r.repaired_at.toISOString() }));
}

/** The last drift recorded by a recount job (its run's counts), for the status checklist. */
export async function lastRecount(pool: Pool, jobs: readonly string[]): Promise<{ job: string; finishedAt: string; drifted: number } | null> {
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
