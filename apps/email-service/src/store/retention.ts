import type { Pool } from 'pg';

// The purge of the email tables. It is this service's SQL, exported from its public entry
// (retention/purge.ts, `purgeEmailHistory`); the reconciler schedules it (job `retention.email`) and
// runs it in its process. The EVENT_EXPIRED guard (retention/refuse-expired.ts) is what makes the
// horizon safe (docs/EMAIL.md "Retention").

/** The shortest horizon the email tables accept: beyond a digest period (1 day) plus the clock margin. */
export const MIN_EMAIL_RETENTION_MS = 2 * 86_400_000;

export interface EmailPurgeOptions {
  olderThanMs: number;
  /** Ledger rows per DELETE; digest windows go a tenth as many at a time (each takes its items along). */
  batchSize: number;
  /** Checked between batches. */
  signal?: AbortSignal;
  /** Count what would be deleted, delete nothing. */
  dryRun?: boolean;
}

export interface EmailPurgeCounts {
  deliveries: number;
  digestWindows: number;
  digestItems: number;
  [name: string]: number;
}

/**
 * Deletes what only history needs, in short batches (docs/EMAIL.md, "Retention"):
 *
 * - ledger rows (`email_deliveries`) that are finished — sent, failed or suppressed — and were
 *   created before the horizon. A pending or sending row is work in progress, whatever its age.
 *   By created_at, a column never updated (its index keeps the state transitions HOT).
 * - digest windows that are closed (flushed or empty) and ended before the horizon, with their items,
 *   unless the window's digest email is still pending or sending: the sender reads the items then.
 *
 * An open window is never deleted, nor are email_users (one row per user, a projection) and
 * email_suppressions (one row per opt-out, which is the user's choice, kept as long as it holds).
 */
export async function purgeEmailTables(pool: Pool, options: EmailPurgeOptions): Promise<EmailPurgeCounts> {
  if (!(options.olderThanMs >= MIN_EMAIL_RETENTION_MS)) {
    throw new RangeError(
      `email retention of ${options.olderThanMs} ms is below the minimum of ${MIN_EMAIL_RETENTION_MS} ms (2 days)`,
    );
  }
  const counts: EmailPurgeCounts = { deliveries: 0, digestWindows: 0, digestItems: 0 };
  const horizon = `now() - $1::float8 * interval '1 millisecond'`;
  if (options.dryRun) {
    const res = await pool.query<{ deliveries: number; windows: number; items: number }>(
      `WITH doomed AS (
         SELECT w.id FROM email_digest_windows w
          WHERE w.status IN ('flushed', 'empty') AND w.window_end < ${horizon}
            AND NOT EXISTS (SELECT 1 FROM email_deliveries d WHERE d.digest_window_id = w.id AND d.state IN ('pending', 'sending'))
       )
       SELECT (SELECT count(*) FROM email_deliveries WHERE created_at < ${horizon} AND state IN ('sent', 'failed', 'suppressed'))::int AS deliveries,
              (SELECT count(*) FROM doomed)::int AS windows,
              (SELECT count(*) FROM email_digest_items WHERE window_id IN (SELECT id FROM doomed))::int AS items`,
      [options.olderThanMs],
    );
    return { deliveries: res.rows[0].deliveries, digestWindows: res.rows[0].windows, digestItems: res.rows[0].items };
  }
  for (;;) {
    options.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM email_deliveries WHERE id IN (
         SELECT id FROM email_deliveries
          WHERE created_at < ${horizon} AND state IN ('sent', 'failed', 'suppressed')
          ORDER BY created_at LIMIT $2)`,
      [options.olderThanMs, options.batchSize],
    );
    counts.deliveries += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < options.batchSize) break;
  }
  const windowBatch = Math.max(1, Math.ceil(options.batchSize / 10));
  for (;;) {
    options.signal?.throwIfAborted();
    // Items first, explicitly, so they can be counted (the cascade would find none left). SKIP
    // LOCKED: a window a flusher holds right now is left for the next run.
    const res = await pool.query<{ windows: number; items: number }>(
      `WITH doomed AS (
         SELECT w.id FROM email_digest_windows w
          WHERE w.status IN ('flushed', 'empty') AND w.window_end < ${horizon}
            AND NOT EXISTS (SELECT 1 FROM email_deliveries d WHERE d.digest_window_id = w.id AND d.state IN ('pending', 'sending'))
          ORDER BY w.window_end LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), items AS (
         DELETE FROM email_digest_items WHERE window_id IN (SELECT id FROM doomed) RETURNING 1
       ), windows AS (
         DELETE FROM email_digest_windows WHERE id IN (SELECT id FROM doomed) RETURNING 1
       )
       SELECT (SELECT count(*) FROM windows)::int AS windows, (SELECT count(*) FROM items)::int AS items`,
      [options.olderThanMs, windowBatch],
    );
    counts.digestWindows += res.rows[0].windows;
    counts.digestItems += res.rows[0].items;
    if (res.rows[0].windows < windowBatch) break;
  }
  return counts;
}
