import type { Pool } from 'pg';
import { validateOrThrow } from '@community/contracts';
import type { Messaging } from '@community/messaging';
import { createNotificationBatchHandler } from './handlers/notification-batch';
import type { NotificationMetrics } from './metrics';

export const CRITICAL_QUEUE = 'notification-service.critical';
export const STANDARD_QUEUE = 'notification-service.standard';

export interface ConsumerSettings {
  batchSize: number;
  batchWaitMs: number;
  batchConcurrency: number;
}

/**
 * Both queues run the same batch handler, each with its own inbox consumer name. They are
 * separate consumers on purpose: a backlog of follows and reactions on the standard queue never
 * sits in front of a mention or a security alert.
 */
export function registerConsumers(messaging: Messaging, deps: { pool: Pool; metrics: NotificationMetrics }, settings: ConsumerSettings): void {
  for (const queue of [CRITICAL_QUEUE, STANDARD_QUEUE]) {
    messaging.consume({
      queue,
      name: `${queue}:notifications`,
      // A batch transaction takes milliseconds; 10 s is far past any healthy one and still well
      // inside the broker's consumer_timeout.
      timeoutMs: 10_000,
      validate: validateOrThrow,
      batch: {
        size: settings.batchSize,
        maxWaitMs: settings.batchWaitMs,
        concurrency: settings.batchConcurrency,
        handle: createNotificationBatchHandler({ pool: deps.pool, consumer: queue, metrics: deps.metrics }),
      },
    });
  }
}
