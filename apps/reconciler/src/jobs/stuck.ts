import type { Logger } from 'pino';
import type { ScheduledJob } from '@community/db';
import type { ReconcilerMetrics } from '../metrics';
import { findStuckWork } from '../store/stuck';

export const STUCK_WORK_JOB = 'stuck-work';

/** Publishes the stuck-work gauges and the outbox lag, and warns naming what is stuck. */
export function stuckWorkJob(o: { intervalMs: number; outboxAfterMs: number; leaseGraceMs: number; metrics: ReconcilerMetrics; logger: Logger }): ScheduledJob {
  return {
    name: STUCK_WORK_JOB,
    intervalMs: o.intervalMs,
    run: async ({ pool }) => {
      const stuck = await findStuckWork(pool, { outboxAfterMs: o.outboxAfterMs, leaseGraceMs: o.leaseGraceMs });
      o.metrics.stuckWork.set({ kind: 'outbox_unsent' }, stuck.outboxUnsent);
      o.metrics.stuckWork.set({ kind: 'email_lease_expired' }, stuck.emailLeasesExpired);
      o.metrics.outboxLag.set(stuck.outboxLagSeconds);
      if (stuck.outboxUnsent > 0) {
        o.logger.warn({ rows: stuck.outboxUnsent, producers: stuck.outboxProducers, lagSeconds: Math.round(stuck.outboxLagSeconds) }, 'stuck work: outbox rows unsent beyond the threshold');
      }
      if (stuck.emailLeasesExpired > 0) o.logger.warn({ deliveries: stuck.emailLeasesExpired }, 'stuck work: email deliveries whose lease expired without a takeover');
      return { outbox_unsent: stuck.outboxUnsent, email_lease_expired: stuck.emailLeasesExpired };
    },
  };
}
