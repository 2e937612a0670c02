import type { Pool } from 'pg';

export interface DeadHolderLeases {
  /** Email deliveries in `sending` under a lease that has not expired but whose holder is dead. */
  count: number;
  /** The latest lease_until among them: when the last one expires if nobody takes it over first. */
  until: Date | null;
}

/**
 * Leases of dead email-service processes (email_service_instances: no heartbeat within
 * the `dead_after_ms` the holder declared, or no row at all: a clean stop deletes it). email-service takes each over at the
 * next delivery of its message (docs/EMAIL.md "A dead holder's lease"); until then those messages
 * wait, and this is how the `stale-leases` line says so. Read-only, like the rest of stuck work.
 */
export async function findDeadHolderLeases(pool: Pool): Promise<DeadHolderLeases> {
  const { rows } = await pool.query<{ count: number; until: Date | null }>(
    `SELECT count(*)::int AS count, max(d.lease_until) AS until
       FROM email_deliveries d
      WHERE d.state = 'sending' AND d.lease_until >= now() AND d.lease_holder IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM email_service_instances i
                         WHERE i.instance_id = d.lease_holder AND i.heartbeat_at >= now() - i.dead_after_ms * interval '1 millisecond')`,
  );
  return rows[0];
}
