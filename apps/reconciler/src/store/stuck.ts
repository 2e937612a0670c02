import type { Pool } from 'pg';
import { countExpiredLeases } from '@community/email-service';
import { countStuckChunks } from '@community/feed-service';
import { unsentOutbox } from '@community/outbox';
import type { StuckWork } from '../domain/facts';

/**
 * Work that should have moved and did not. Read-only: the owners of this work (the relays, the
 * email consumers) are the ones that move it; the reconciler reports it (docs/RECONCILER.md
 * "Stuck work" explains why it does not take the work over). Each count is its table owner's query.
 */
export async function findStuckWork(
  pool: Pool,
  o: { outboxAfterMs: number; leaseGraceMs: number; fanoutAfterMs: number },
): Promise<StuckWork> {
  const [outbox, leases, chunks] = await Promise.all([
    unsentOutbox(pool, { afterMs: o.outboxAfterMs }),
    countExpiredLeases(pool, { graceMs: o.leaseGraceMs }),
    countStuckChunks(pool, { afterMs: o.fanoutAfterMs }),
  ]);
  return {
    outboxUnsent: outbox.rows,
    outboxLagSeconds: outbox.lagSeconds,
    outboxProducers: outbox.producers,
    emailLeasesExpired: leases,
    fanoutChunks: chunks,
  };
}
