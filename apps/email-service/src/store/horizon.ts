import type { Pool } from 'pg';

/**
 * Records the retention horizon this service's EVENT_EXPIRED guard is computed from
 * (EMAIL_RETENTION_DAYS), at every start. The reconciler, which runs the purge, never deletes
 * ledger rows younger than the horizon recorded here, whatever its own configuration says: a purge
 * shorter than the guard assumes would let a late copy find no row and send a second email
 * (docs/EMAIL.md "Retention"). The last replica to start wins, as its configuration is the newest.
 */
export async function recordRetentionHorizon(pool: Pool, horizonMs: number): Promise<void> {
  await pool.query(
    `INSERT INTO retention_horizons (name, horizon_ms, set_by) VALUES ('email', $1, 'email-service')
     ON CONFLICT (name) DO UPDATE SET horizon_ms = EXCLUDED.horizon_ms, set_by = EXCLUDED.set_by, updated_at = now()`,
    [horizonMs],
  );
}

/** The horizon recorded by the last replica to start, 0 when none did yet. */
export async function recordedRetentionHorizonMs(pool: Pool): Promise<number> {
  const res = await pool.query<{ horizon_ms: string }>(
    `SELECT horizon_ms FROM retention_horizons WHERE name = 'email'`,
  );
  return res.rows[0] ? Number(res.rows[0].horizon_ms) : 0;
}
