import type { Pool } from 'pg';
import { retractedSubjectOf, type AnyEvent } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { Logger } from 'pino';
import type { Outcome } from '@community/messaging';
import type { NotificationMetrics } from '../metrics';
import { retract } from '../store/retraction';

/**
 * comment.deleted, post.deleted, reaction.removed (docs/NOTIFICATIONS.md "Retraction"), on
 * notification-service.standard: the subject's tombstone and the withdrawal of every notification
 * it names, in ONE transaction with the inbox claim (store/retraction.ts). A redelivery finds the
 * claim and is a duplicate.
 */
export async function handleRetraction(
  pool: Pool,
  consumer: string,
  event: AnyEvent,
  deadline: { signal: AbortSignal; statementTimeoutMs: number },
  metrics: NotificationMetrics,
  logger?: Logger,
): Promise<Outcome> {
  const subject = retractedSubjectOf(event);
  if (subject === undefined) throw new TypeError(`handleRetraction: ${event.type} is not a retraction`);
  const result = await withTransaction(pool, deadline, (tx) =>
    retract(tx, consumer, { type: event.type, eventId: event.id, correlationId: event.correlationId }, subject),
  );
  if (!result) return 'duplicate';
  for (const w of result.withdrawn) metrics.withdrawn.inc({ type: w.type });
  logger?.info({ subject, withdrawn: result.withdrawn.length, tombstoned: result.tombstoned }, 'retraction applied');
  return 'processed';
}
