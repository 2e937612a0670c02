import type { Pool } from 'pg';

export interface StuckWork {
  /** Outbox rows unsent for longer than the threshold (relay down, or a row it cannot publish). */
  outboxUnsent: number;
  /** Seconds since the oldest unsent outbox row was written (0 when none). */
  outboxLagSeconds: number;
  /** Producers with stuck rows, for the log line. */
  outboxProducers: string[];
  /** Email deliveries still `sending` whose lease expired more than the grace ago: nobody took them over. */
  emailLeasesExpired: number;
}

/**
 * Work that should have moved and did not. Read-only: the owners of this work (the relays, the
 * email consumers) are the ones that move it; the reconciler reports it (docs/RECONCILER.md
 * "Stuck work" explains why it does not take the work over).
 */
export async function findStuckWork(pool: Pool, o: { outboxAfterMs: number; leaseGraceMs: number }): Promise<StuckWork> {
  const res = await pool.query<{ unsent: number; lag: number; producers: string[] | null; leases: number }>(
    `SELECT (SELECT count(*) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond')::int AS unsent,
            coalesce((SELECT EXTRACT(EPOCH FROM now() - min(created_at)) FROM outbox_messages WHERE sent_at IS NULL), 0)::float8 AS lag,
            (SELECT array_agg(DISTINCT producer) FROM outbox_messages WHERE sent_at IS NULL AND created_at < now() - $1::float8 * interval '1 millisecond') AS producers,
            (SELECT count(*) FROM email_deliveries WHERE state = 'sending' AND lease_until < now() - $2::float8 * interval '1 millisecond')::int AS leases`,
    [o.outboxAfterMs, o.leaseGraceMs],
  );
  const r = res.rows[0];
  return { outboxUnsent: r.unsent, outboxLagSeconds: r.lag, outboxProducers: r.producers ?? [], emailLeasesExpired: r.leases };
}
