import type { Pool } from 'pg';

/**
 * What the reconciler's stuck-work and lost-work checks read from the fan-out tables (store/fanout.ts):
 * chunks not done of a job that is not done. Exported from the public entry, so the SQL that names
 * feed-service's tables stays here; the reconciler re-publishes such a chunk's message (the chunk
 * handler skips a checkpointed chunk, and writing a chunk twice changes nothing: docs/FEED.md). Read-only.
 */

/** Binds a value as a parameter of the statement being built and returns its placeholder (`$n`). */
export type BindParam = (value: unknown) => string;

export interface StuckChunk {
  postId: string;
  chunkNo: number;
  attempts: number;
  plannedAt: Date;
}

const NOT_DONE = `FROM feed_fanout_chunks c JOIN feed_fanout_jobs j ON j.post_id = c.post_id WHERE j.done_at IS NULL AND c.done_at IS NULL`;

/** Chunks not done of jobs planned longer than `afterMs` ago. */
export async function countStuckChunks(pool: Pool, o: { afterMs: number }): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n ${NOT_DONE} AND j.planned_at < now() - $1::float8 * interval '1 millisecond'`,
    [o.afterMs],
  );
  return rows[0].n;
}

/** The stuck chunks themselves, oldest job first, at most `limit`. */
export async function stuckFanoutChunks(pool: Pool, o: { afterMs: number; limit: number }): Promise<StuckChunk[]> {
  const { rows } = await pool.query<{ post_id: string; chunk_no: number; attempts: number; planned_at: Date }>(
    `SELECT c.post_id, c.chunk_no, c.attempts, j.planned_at ${NOT_DONE}
        AND j.planned_at < now() - $1::float8 * interval '1 millisecond'
      ORDER BY j.planned_at, c.post_id, c.chunk_no LIMIT $2`,
    [o.afterMs, o.limit],
  );
  return rows.map((r) => ({ postId: r.post_id, chunkNo: r.chunk_no, attempts: r.attempts, plannedAt: r.planned_at }));
}

/** A SELECT of the chunks not done of jobs planned in [since, until): columns `post_id`, `chunk_no`, `at` (planned_at). */
export function pendingChunksSql(bind: BindParam, w: { since: Date; until: Date }): string {
  return `SELECT c.post_id, c.chunk_no, j.planned_at AS at ${NOT_DONE} AND j.planned_at >= ${bind(w.since)} AND j.planned_at < ${bind(w.until)}`;
}
