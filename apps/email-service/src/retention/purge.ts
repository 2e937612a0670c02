import type { Pool } from 'pg';
import { recordedRetentionHorizonMs } from '../store/horizon';
import { purgeEmailTables, type EmailPurgeCounts } from '../store/retention';

const DAY_MS = 86_400_000;

export interface EmailHistoryPurgeOptions {
  /** The scheduler's horizon (the reconciler's EMAIL_RETENTION_DAYS); a longer recorded one wins. */
  olderThanMs: number;
  batchSize: number;
  signal?: AbortSignal;
  dryRun?: boolean;
}

/**
 * The retention job of the email tables, exported for the reconciler to schedule. It never purges
 * rows younger than the horizon this service recorded at its last start (store/horizon.ts), whatever
 * the scheduler asks: that horizon is the one the EVENT_EXPIRED guard assumes, and a shorter purge
 * would let a late copy of an event find no ledger row and send a second email (docs/EMAIL.md
 * "Retention"). The counts carry the horizon used, in days.
 */
export async function purgeEmailHistory(
  pool: Pool,
  o: EmailHistoryPurgeOptions,
): Promise<EmailPurgeCounts & { horizon_days: number }> {
  const olderThanMs = Math.max(o.olderThanMs, await recordedRetentionHorizonMs(pool));
  const counts = await purgeEmailTables(pool, {
    olderThanMs,
    batchSize: o.batchSize,
    signal: o.signal,
    dryRun: o.dryRun,
  });
  return { ...counts, horizon_days: olderThanMs / DAY_MS };
}
