import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { nextAfter } from '../domain/answer';
import type { PushMetrics } from '../metrics';
import * as ledger from '../store/ledger';
import type { PushSender } from './sender';

export interface DeliverDeps {
  pool: Pool;
  sender: PushSender;
  metrics: PushMetrics;
  logger: Logger;
  maxAttempts: number;
  now?: () => Date;
}

/**
 * Sends claimed rows and records each answer (domain/answer.ts decides, one conditional statement
 * of the ledger performs it). A row whose lease was lost meanwhile (taken over after it expired)
 * is left to its new holder.
 */
export async function deliver(deps: DeliverDeps, leases: readonly ledger.Lease[], signal?: AbortSignal): Promise<void> {
  await Promise.all(leases.map((lease) => deliverOne(deps, lease, signal)));
}

async function deliverOne(deps: DeliverDeps, lease: ledger.Lease, signal?: AbortSignal): Promise<void> {
  const { pool, sender, metrics, logger } = deps;
  const stop = metrics.sendSeconds.startTimer();
  const answer = await sender.send(lease, signal);
  stop();
  const status = answer.kind === 'status' ? answer.status : null;
  const next = nextAfter(answer, {
    attempts: lease.attempts,
    maxAttempts: deps.maxAttempts,
    now: deps.now?.() ?? new Date(),
    expiresAt: lease.expiresAt,
  });
  const log = logger.child({ deliveryId: lease.id, attempt: lease.attempts, status });
  switch (next.state) {
    case 'sent':
      await ledger.markSent(pool, lease, status ?? 201);
      metrics.attempts.inc({ outcome: 'sent' });
      log.debug('push sent');
      return;
    case 'gone':
      await ledger.markGone(pool, lease, status ?? 410);
      metrics.attempts.inc({ outcome: 'gone' });
      metrics.subscriptions.inc({ action: 'gone' });
      log.info('push subscription gone: removed');
      return;
    case 'failed':
      await ledger.markFailed(pool, lease, status, next.reason);
      metrics.attempts.inc({ outcome: 'failed' });
      log.warn({ reason: next.reason }, 'push failed');
      return;
    case 'pending':
      await ledger.reschedule(pool, lease, status, next.at, next.reason);
      metrics.attempts.inc({ outcome: 'retry' });
      log.info({ retryAt: next.at.toISOString(), reason: next.reason }, 'push retried later');
      return;
  }
}
