import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { Handler } from '@community/messaging';
import { eraseUser } from '../store/erasure';

/**
 * user.erased (docs/RUNBOOK.md "Erasure"), on push-service.send: the user's subscriptions deleted
 * and their pending pushes cancelled, the ledger's payloads removed, in ONE transaction with the
 * inbox claim under `consumer` (the queue's name, which the reconciler's erasure status looks up).
 */
export function userErasedHandler(pool: Pool, consumer: string): Handler<EventOf<'user.erased'>> {
  return async (event, ctx) => {
    const counts = await withTransaction(pool, { signal: ctx.signal }, (tx) =>
      eraseUser(tx, consumer, event, event.data.userId),
    );
    if (!counts) return 'duplicate';
    ctx.logger.info({ erasureId: event.data.erasureId, ...counts }, 'user erased');
    return 'processed';
  };
}
