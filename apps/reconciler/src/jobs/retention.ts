import type { ScheduledJob } from '@community/db';
import type { ReconcilerConfig } from '../config';
import { purgeEmailHistory } from '@community/email-service';
import { purgeFeedHistory } from '@community/feed-service';
import { purgeSentOutbox } from '@community/outbox';
import { purgeCounterRepairs, purgeFinalDlqMessages, purgeInbox } from '../store/retention';

export const INBOX_RETENTION_JOB = 'retention.inbox';
export const EMAIL_RETENTION_JOB = 'retention.email';
export const OUTBOX_RETENTION_JOB = 'retention.outbox';
export const DLQ_RETENTION_JOB = 'retention.dlq';
export const COUNTER_REPAIRS_RETENTION_JOB = 'retention.counter-repairs';
export const FEED_RETENTION_JOB = 'retention.feed';

const DAY_MS = 86_400_000;

type RetentionConfig = Pick<
  ReconcilerConfig,
  | 'RETENTION_INTERVAL_MS'
  | 'RETENTION_BATCH_SIZE'
  | 'INBOX_RETENTION_DAYS'
  | 'EMAIL_RETENTION_DAYS'
  | 'OUTBOX_RETENTION_DAYS'
  | 'DLQ_RETENTION_DAYS'
  | 'COUNTER_REPAIRS_RETENTION_DAYS'
  | 'FEED_RETENTION_DAYS'
  | 'FEED_CAP'
>;

/**
 * Retention of what only history needs, moved here from notification-service (inbox rows) and
 * email-service (ledger, digest windows), plus sent outbox rows of every producer. Each deletes in
 * short batches, so a run can be cut short at any point (the next run continues). The horizons'
 * safety rules are in docs/RECONCILER.md "Retention".
 */
export function retentionJobs(config: RetentionConfig): ScheduledJob[] {
  const batchSize = config.RETENTION_BATCH_SIZE;
  const intervalMs = config.RETENTION_INTERVAL_MS;
  return [
    {
      name: INBOX_RETENTION_JOB,
      intervalMs,
      run: ({ pool, signal, dryRun }) =>
        purgeInbox(pool, { olderThanMs: config.INBOX_RETENTION_DAYS * DAY_MS, batchSize, signal, dryRun }),
    },
    {
      name: EMAIL_RETENTION_JOB,
      intervalMs,
      // email-service's job: never shorter than the horizon its EVENT_EXPIRED guard assumes (it records it at start).
      run: ({ pool, signal, dryRun }) =>
        purgeEmailHistory(pool, { olderThanMs: config.EMAIL_RETENTION_DAYS * DAY_MS, batchSize, signal, dryRun }),
    },
    {
      // libs/outbox's own purge, the only one: the relays do not delete sent rows (docs/OUTBOX.md).
      name: OUTBOX_RETENTION_JOB,
      intervalMs,
      run: ({ pool, signal, dryRun }) =>
        purgeSentOutbox(pool, { olderThanMs: config.OUTBOX_RETENTION_DAYS * DAY_MS, batchSize, signal, dryRun }),
    },
    {
      // The DLQ console's rows once an operator is done with them (docs/DLQ-CONSOLE.md "Retention").
      name: DLQ_RETENTION_JOB,
      intervalMs,
      run: ({ pool, signal, dryRun }) =>
        purgeFinalDlqMessages(pool, { olderThanMs: config.DLQ_RETENTION_DAYS * DAY_MS, batchSize, signal, dryRun }),
    },
    {
      // The reconciler's own audit of counter repairs (docs/RECONCILER.md "Unread counters").
      name: COUNTER_REPAIRS_RETENTION_JOB,
      intervalMs,
      run: ({ pool, signal, dryRun }) =>
        purgeCounterRepairs(pool, {
          olderThanMs: config.COUNTER_REPAIRS_RETENTION_DAYS * DAY_MS,
          batchSize,
          signal,
          dryRun,
        }),
    },
    {
      // feed-service's job: done fan-outs, and posts no feed needs any more (docs/FEED.md "Retention").
      name: FEED_RETENTION_JOB,
      intervalMs,
      run: ({ pool, signal, dryRun }) =>
        purgeFeedHistory(pool, {
          olderThanMs: config.FEED_RETENTION_DAYS * DAY_MS,
          cap: config.FEED_CAP,
          batchSize,
          signal,
          dryRun,
        }),
    },
  ];
}
