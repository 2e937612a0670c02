import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { Logger } from 'pino';
import type { Outcome } from '@community/messaging';
import { eraseUser } from '../store/erasure';

/**
 * user.erased (docs/RUNBOOK.md "Erasure"), on notification-service.standard: everything
 * notification-service holds about the user, erased or anonymised in ONE transaction with the
 * inbox claim (store/erasure.ts). A redelivery finds the claim and is a duplicate; a failure rolls
 * the claim back with the rest, and the retry erases.
 */
export async function handleUserErased(
  pool: Pool,
  consumer: string,
  event: EventOf<'user.erased'>,
  deadline: { signal: AbortSignal; statementTimeoutMs: number },
  logger?: Logger,
): Promise<Outcome> {
  const accountDeleted = event.data.cause === 'account_deleted' ? { correlationId: event.correlationId } : undefined;
  const counts = await withTransaction(pool, deadline, (tx) =>
    eraseUser(tx, consumer, event.id, event.data.userId, accountDeleted),
  );
  if (!counts) return 'duplicate';
  logger?.info({ erasureId: event.data.erasureId, ...counts }, 'user erased');
  return 'processed';
}
