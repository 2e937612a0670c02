import type { Pool } from 'pg';
import { countPurgeableProcessedEvents, purgeProcessedEvents } from '@community/idempotency';

/**
 * Inbox rows (processed_events) of every consumer past the horizon, by libs/idempotency's own purge
 * (its horizon floor included); with `dryRun`, only counted, by the same lib.
 */
export async function purgeInbox(
  pool: Pool,
  o: { olderThanMs: number; batchSize: number; signal?: AbortSignal; dryRun: boolean },
): Promise<{ deleted: number }> {
  if (o.dryRun) return { deleted: await countPurgeableProcessedEvents(pool, { olderThanMs: o.olderThanMs }) };
  return {
    deleted: await purgeProcessedEvents(pool, { olderThanMs: o.olderThanMs, batchSize: o.batchSize, signal: o.signal }),
  };
}

/**
 * Dead-lettered messages in a final state (replayed, discarded) whose last action is older than the
 * horizon. Pending (and replaying) ones are never touched: they still wait for an operator. The
 * audit (dlq_operations, dlq_operation_items) is kept: it names message ids, not rows it needs.
 */
export async function purgeFinalDlqMessages(
  pool: Pool,
  o: { olderThanMs: number; batchSize: number; signal?: AbortSignal; dryRun: boolean },
): Promise<{ deleted: number }> {
  const where = `state IN ('replayed', 'discarded') AND acted_at < now() - $1::float8 * interval '1 millisecond'`;
  if (o.dryRun) {
    const res = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM dlq_messages WHERE ${where}`, [
      o.olderThanMs,
    ]);
    return { deleted: res.rows[0].n };
  }
  let deleted = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM dlq_messages WHERE id IN (SELECT id FROM dlq_messages WHERE ${where} ORDER BY id LIMIT $2)`,
      [o.olderThanMs, o.batchSize],
    );
    deleted += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < o.batchSize) return { deleted };
  }
}

/**
 * Audit rows of counter repairs (counter_repairs) older than the horizon. The audit answers "was
 * this user's counter repaired lately, by what, from what to what"; the drift metric and the job
 * runs keep the trend, so old rows only grow the table.
 */
export async function purgeCounterRepairs(
  pool: Pool,
  o: { olderThanMs: number; batchSize: number; signal?: AbortSignal; dryRun: boolean },
): Promise<{ deleted: number }> {
  const where = `repaired_at < now() - $1::float8 * interval '1 millisecond'`;
  if (o.dryRun) {
    const res = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM counter_repairs WHERE ${where}`, [
      o.olderThanMs,
    ]);
    return { deleted: res.rows[0].n };
  }
  let deleted = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    // By the repaired_at index: each batch is the oldest rows' ids, one short statement.
    const res = await pool.query(
      `DELETE FROM counter_repairs WHERE id IN (SELECT id FROM counter_repairs WHERE ${where} ORDER BY repaired_at LIMIT $2)`,
      [o.olderThanMs, o.batchSize],
    );
    deleted += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < o.batchSize) return { deleted };
  }
}
