import type { Pool } from 'pg';
import type { StuckWork } from '../domain/facts';

export interface StuckChunk {
  postId: string;
  chunkNo: number;
  attempts: number;
  plannedAt: Date;
}

/**
 * Work that should have moved and did not. Read-only: the owners of this work (the relays, the
 * email consumers) are the ones that move it; the reconciler reports it (docs/RECONCILER.md
 * "Stuck work" explains why it does not take the work over).
 */
export async function findStuckWork(
  pool: Pool,
  o: { outboxAfterMs: number; leaseGraceMs: number; fanoutAfterMs: number },
): Promise<StuckWork> {
  const res = await pool.query<{
    unsent: number;
    lag: number;
    producers: string[] | null;
    leases: number;
    chunks: number;
  }>(
    `SELECT (SELECT count(*) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond')::int AS unsent,
            coalesce((SELECT EXTRACT(EPOCH FROM now() - min(created_at)) FROM outbox_messages WHERE sent_at IS NULL), 0)::float8 AS lag,
            (SELECT array_agg(DISTINCT producer) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond') AS producers,
            (SELECT count(*) FROM email_deliveries WHERE state = 'sending' AND lease_until < now() - $2::float8 * interval '1 millisecond')::int AS leases,
            (SELECT count(*) FROM feed_fanout_chunks c JOIN feed_fanout_jobs j ON j.post_id = c.post_id
              WHERE j.done_at IS NULL AND c.done_at IS NULL AND j.planned_at < now() - $3::float8 * interval '1 millisecond')::int AS chunks`,
    [o.outboxAfterMs, o.leaseGraceMs, o.fanoutAfterMs],
  );
  const r = res.rows[0];
  return {
    outboxUnsent: r.unsent,
    outboxLagSeconds: r.lag,
    outboxProducers: r.producers ?? [],
    emailLeasesExpired: r.leases,
    fanoutChunks: r.chunks,
  };
}

/**
 * The stuck fan-out chunks themselves (oldest job first, at most `limit`): their chunk message was
 * lost or dead-lettered, or every replica that took it died. Re-publishing it is safe: feed-service's
 * chunk handler skips a checkpointed chunk and writing a chunk twice changes nothing (docs/FEED.md).
 */
export async function stuckFanoutChunks(pool: Pool, o: { afterMs: number; limit: number }): Promise<StuckChunk[]> {
  const { rows } = await pool.query<{ post_id: string; chunk_no: number; attempts: number; planned_at: Date }>(
    `SELECT c.post_id, c.chunk_no, c.attempts, j.planned_at FROM feed_fanout_chunks c JOIN feed_fanout_jobs j ON j.post_id = c.post_id
      WHERE j.done_at IS NULL AND c.done_at IS NULL AND j.planned_at < now() - $1::float8 * interval '1 millisecond'
      ORDER BY j.planned_at, c.post_id, c.chunk_no LIMIT $2`,
    [o.afterMs, o.limit],
  );
  return rows.map((r) => ({ postId: r.post_id, chunkNo: r.chunk_no, attempts: r.attempts, plannedAt: r.planned_at }));
}
