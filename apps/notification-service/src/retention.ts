import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ConfigIssue } from '@community/config';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { createScheduler, type Scheduler } from '@community/db';
import { inboxRetentionJob, longestRedeliveryMs } from '@community/idempotency';
import { DEFAULT_DELIVERY_LIMIT, type QueueSpec } from '@community/messaging';
import type { NotificationConfig } from './config';
import { BATCH_TIMEOUT_MS, CRITICAL_QUEUE, STANDARD_QUEUE } from './queues';
import { SERVICE_NAME } from './config';

const DAY_MS = 86_400_000;
const INBOX_CONSUMERS = [CRITICAL_QUEUE, STANDARD_QUEUE];

/**
 * The inbox horizon must outlast every bounded way a copy of an event can still reach these
 * consumers (retry tiers, redeliveries): checked at start against the topology they consume from.
 * Copies that can come later (a DLQ replay, a producer's relay back after an outage) pass the inbox
 * and are absorbed by the notifications' unique slot key, which is never purged (docs/DATABASE.md,
 * "Retention").
 */
export function inboxRetentionIssues(
  config: Pick<NotificationConfig, 'INBOX_RETENTION_DAYS'>,
  queues: readonly QueueSpec[] = COMMUNITY_TOPOLOGY.queues,
  handlerTimeoutMs = BATCH_TIMEOUT_MS,
): ConfigIssue[] {
  const retentionMs = config.INBOX_RETENTION_DAYS * DAY_MS;
  const issues: ConfigIssue[] = [];
  for (const queue of queues.filter((q) => INBOX_CONSUMERS.includes(q.name))) {
    const longest = longestRedeliveryMs({ retryDelaysMs: queue.retryDelaysMs, deliveryLimit: queue.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT, handlerTimeoutMs });
    if (retentionMs <= longest) {
      issues.push({
        name: 'INBOX_RETENTION_DAYS',
        message: `INBOX_RETENTION_DAYS: ${config.INBOX_RETENTION_DAYS} days must exceed the longest redelivery of ${queue.name} (${Math.ceil(longest / 60_000)} min: its retry tiers plus every delivery running to the handler deadline)`,
      });
    }
  }
  return issues;
}

export interface NotificationRetentionDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  config: Pick<NotificationConfig, 'INBOX_RETENTION_DAYS' | 'RETENTION_INTERVAL_MS' | 'RETENTION_BATCH_SIZE'>;
}

/**
 * The retention jobs notification-service runs: its consumers' inbox rows (processed_events).
 * Every replica runs the scheduler; one at a time runs a job (docs/DATABASE.md, "Scheduled jobs").
 * Call start() once the service runs and stop() before the pool ends.
 */
export function createNotificationRetention(deps: NotificationRetentionDeps): Scheduler {
  const { config } = deps;
  return createScheduler({
    pool: deps.pool,
    logger: deps.logger.child({ component: 'retention' }),
    registry: deps.registry,
    jobs: [
      inboxRetentionJob({
        name: `inbox-retention:${SERVICE_NAME}`,
        intervalMs: config.RETENTION_INTERVAL_MS,
        retentionMs: config.INBOX_RETENTION_DAYS * DAY_MS,
        consumers: INBOX_CONSUMERS,
        batchSize: config.RETENTION_BATCH_SIZE,
      }),
    ],
  });
}
