import type { Logger } from 'pino';
import type { ScheduledJob } from '@community/db';
import type { Publisher } from '@community/messaging';
import { sendFanoutChunk, stuckFanoutChunks } from '@community/feed-service';
import type { ReconcilerMetrics } from '../metrics';
import { findStuckWork } from '../store/stuck';

export const STUCK_WORK_JOB = 'stuck-work';

/** Stuck chunks re-published per run (bounds one run; the next run continues). */
const REPUBLISH_PER_RUN = 1_000;

export interface StuckWorkJobOptions {
  intervalMs: number;
  outboxAfterMs: number;
  leaseGraceMs: number;
  fanoutAfterMs: number;
  metrics: ReconcilerMetrics;
  logger: Logger;
  /** Re-publishes stuck fan-out chunks when present (the reconciler's messaging). */
  publisher?: Publisher;
  clock?: () => Date;
}

/**
 * Publishes the stuck-work gauges and the outbox lag, and warns naming what is stuck. Of these, only
 * fan-out chunks are repaired here: their message is re-published to feed-service.fanout (the
 * chunk handler is idempotent), at most once per `fanoutAfterMs` per chunk, so a feed-service that
 * is down does not get a copy per run (docs/RECONCILER.md "Stuck work").
 */
export function stuckWorkJob(o: StuckWorkJobOptions): ScheduledJob {
  const clock = o.clock ?? (() => new Date());
  const republishedAt = new Map<string, number>();
  return {
    name: STUCK_WORK_JOB,
    intervalMs: o.intervalMs,
    run: async ({ pool, dryRun }) => {
      const stuck = await findStuckWork(pool, {
        outboxAfterMs: o.outboxAfterMs,
        leaseGraceMs: o.leaseGraceMs,
        fanoutAfterMs: o.fanoutAfterMs,
      });
      o.metrics.stuckWork.set({ kind: 'outbox_unsent' }, stuck.outboxUnsent);
      o.metrics.stuckWork.set({ kind: 'email_lease_expired' }, stuck.emailLeasesExpired);
      o.metrics.stuckWork.set({ kind: 'fanout_chunk' }, stuck.fanoutChunks);
      o.metrics.outboxLag.set(stuck.outboxLagSeconds);
      if (stuck.outboxUnsent > 0) {
        o.logger.warn(
          {
            rows: stuck.outboxUnsent,
            producers: stuck.outboxProducers,
            lagSeconds: Math.round(stuck.outboxLagSeconds),
          },
          'stuck work: outbox rows unsent beyond the threshold',
        );
      }
      if (stuck.emailLeasesExpired > 0)
        o.logger.warn(
          { deliveries: stuck.emailLeasesExpired },
          'stuck work: email deliveries whose lease expired without a takeover',
        );
      let republished = 0;
      if (stuck.fanoutChunks > 0) {
        const chunks = await stuckFanoutChunks(pool, { afterMs: o.fanoutAfterMs, limit: REPUBLISH_PER_RUN });
        o.logger.warn(
          { chunks: stuck.fanoutChunks, posts: [...new Set(chunks.map((c) => c.postId))].slice(0, 20) },
          'stuck work: fan-out chunks not done',
        );
        const now = clock().getTime();
        for (const [key, at] of republishedAt) if (now - at >= o.fanoutAfterMs) republishedAt.delete(key);
        if (!dryRun && o.publisher) {
          for (const c of chunks) {
            const key = `${c.postId}#${c.chunkNo}`;
            if (republishedAt.has(key)) continue;
            await sendFanoutChunk(
              o.publisher,
              { postId: c.postId, chunkNo: c.chunkNo },
              `reconciler:stuck:${c.postId}`,
            );
            republishedAt.set(key, now);
            republished += 1;
          }
          o.metrics.fanoutRepublished.inc(republished);
          if (republished > 0)
            o.logger.info({ republished }, 'stuck fan-out chunks re-published to feed-service.fanout');
        }
      }
      return {
        outbox_unsent: stuck.outboxUnsent,
        email_lease_expired: stuck.emailLeasesExpired,
        fanout_chunk: stuck.fanoutChunks,
        fanout_republished: republished,
      };
    },
  };
}
