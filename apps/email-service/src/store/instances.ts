import type { Pool } from 'pg';

/**
 * `email_service_instances`: one row per running email-service process, its holder id for the
 * leases it takes (store/ledger.ts `LeaseHolder`) and a heartbeat on the database clock, the
 * clock the leases use too.
 */

export interface Instance {
  id: string;
  host: string;
  pid: number;
  /** How long it may go without a beat before others count it dead (EMAIL_HOLDER_DEAD_AFTER_MS). */
  deadAfterMs: number;
}

/** The SQL condition "holder `col` is alive": a row with a beat within its own dead_after_ms. */
export const holderAlive = (col: string) =>
  `EXISTS (SELECT 1 FROM email_service_instances i WHERE i.instance_id = ${col} AND i.heartbeat_at >= now() - i.dead_after_ms * interval '1 millisecond')`;

export async function register(pool: Pool, me: Instance): Promise<void> {
  await pool.query(
    `INSERT INTO email_service_instances (instance_id, host, pid, dead_after_ms) VALUES ($1, $2, $3, $4)`,
    [me.id, me.host, me.pid, me.deadAfterMs],
  );
}

/** Re-creates the row if it went missing (pruned by another replica while this one was cut off). */
export async function beat(pool: Pool, me: Instance): Promise<void> {
  await pool.query(
    `INSERT INTO email_service_instances (instance_id, host, pid, dead_after_ms) VALUES ($1, $2, $3, $4)
     ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = now()`,
    [me.id, me.host, me.pid, me.deadAfterMs],
  );
}

/** A clean stop: this process holds no lease any more (they were released or finished). */
export async function deregister(pool: Pool, id: string): Promise<void> {
  await pool.query(`DELETE FROM email_service_instances WHERE instance_id = $1`, [id]);
}

/**
 * Rows of holders dead for an hour: nobody's lease can name them any more (a lease lasts
 * EMAIL_LEASE_MS, far less), and a deleted holder reads as dead all the same.
 */
export async function prune(pool: Pool): Promise<void> {
  await pool.query(`DELETE FROM email_service_instances WHERE heartbeat_at < now() - interval '1 hour'`);
}

export interface DeadHolderLeases {
  /** Deliveries in `sending` under a live lease whose holder is dead. */
  count: number;
  /** The latest lease_until among them: when the last would be taken over without a delivery. */
  until: Date | null;
  holders: string[];
}

/**
 * Leases of dead holders that nobody has taken over yet: each is taken over at the next delivery
 * (or digest tick) of its message, so a count that stays up says those messages are not being
 * delivered here (another queue holds them, or the consumer is paused).
 */
export async function deadHolderLeases(pool: Pool): Promise<DeadHolderLeases> {
  const { rows } = await pool.query<{ count: number; until: Date | null; holders: string[] | null }>(
    `SELECT count(*)::int AS count, max(d.lease_until) AS until, array_agg(DISTINCT d.lease_holder::text) AS holders
       FROM email_deliveries d
      WHERE d.state = 'sending' AND d.lease_until >= now() AND d.lease_holder IS NOT NULL AND NOT ${holderAlive('d.lease_holder')}`,
  );
  const r = rows[0];
  return { count: r.count, until: r.until, holders: r.count > 0 ? (r.holders ?? []) : [] };
}
