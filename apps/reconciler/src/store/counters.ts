import type { Pool, PoolClient } from 'pg';
import type { Drift } from '@community/notification-service';

/**
 * The reconciler's own tables of the unread-counter repair: where a sweep stopped
 * (`reconciler_cursors`) and the audit of every repair (`counter_repairs`). The recount and the
 * repair themselves are notification-service's (its `recountCounterBatch`, which calls
 * `recordRepairs` inside the repair's transaction: docs/RECONCILER.md "Unread counters").
 */

/** One audit row per repaired user, in the transaction that repaired it (so both commit or neither). */
export async function recordRepairs(
  tx: PoolClient,
  repaired: readonly Drift[],
  source: string,
  runId: string | null,
): Promise<void> {
  await tx.query({
    name: 'rc-audit-repairs',
    text: `INSERT INTO counter_repairs (user_id, stored, recounted, source, run_id)
           SELECT user_id, stored, recounted, $4, $5::bigint FROM unnest($1::text[], $2::int[], $3::int[]) AS d(user_id, stored, recounted)`,
    values: [
      repaired.map((d) => d.userId),
      repaired.map((d) => d.stored),
      repaired.map((d) => d.recounted),
      source,
      runId,
    ],
  });
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
