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
export function purgeFinalDlqMessages(pool: Pool, o: PurgeOptions): Promise<{ deleted: number }> {
  return purgeInBatches(pool, o, {
    table: 'dlq_messages',
    where: `state IN ('replayed', 'discarded') AND acted_at < now() - $1::float8 * interval '1 millisecond'`,
    orderBy: 'id',
  });
}

/**
 * Audit rows of counter repairs (counter_repairs) older than the horizon. The audit answers "was
 * this user's counter repaired lately, by what, from what to what"; the drift metric and the job
 * runs keep the trend, so old rows only grow the table.
 */
export function purgeCounterRepairs(pool: Pool, o: PurgeOptions): Promise<{ deleted: number }> {
  // By the repaired_at index: each batch is the oldest rows' ids, one short statement.
  return purgeInBatches(pool, o, {
    table: 'counter_repairs',
    where: `repaired_at < now() - $1::float8 * interval '1 millisecond'`,
    orderBy: 'repaired_at',
  });
}

type PurgeOptions = { olderThanMs: number; batchSize: number; signal?: AbortSignal; dryRun: boolean };

/**
 * The reconciler's own purges: rows of `table` matching `where` (its `$1` is the horizon in ms),
 * deleted in batches of `batchSize` in `orderBy` order, one short statement each, stopping between
 * batches when `signal` aborts; with `dryRun`, only counted.
 */
async function purgeInBatches(
  pool: Pool,
  o: PurgeOptions,
  q: { table: string; where: string; orderBy: string },
): Promise<{ deleted: number }> {
  if (o.dryRun) {
    const res = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q.table} WHERE ${q.where}`, [
      o.olderThanMs,
    ]);
    return { deleted: res.rows[0].n };
  }
  let deleted = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM ${q.table} WHERE id IN (SELECT id FROM ${q.table} WHERE ${q.where} ORDER BY ${q.orderBy} LIMIT $2)`,
      [o.olderThanMs, o.batchSize],
    );
    deleted += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < o.batchSize) return { deleted };
  }
}
