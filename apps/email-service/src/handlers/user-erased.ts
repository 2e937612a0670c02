import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { MessageContext, Outcome } from '@community/messaging';
import { eraseUser } from '../store/erasure';

/**
 * user.erased (docs/RUNBOOK.md "Erasure"), on email-service.users: the user's address, digests and
 * opt-outs erased, the ledger anonymised, in ONE transaction with the inbox claim under `consumer`
 * (store/erasure.ts). A redelivery finds the claim and is a duplicate.
 */
export function userErasedHandler(pool: Pool, consumer: string) {
  return async (event: EventOf<'user.erased'>, ctx: MessageContext): Promise<Outcome> => {
    const counts = await withTransaction(pool, { signal: ctx.signal }, (tx) =>
      eraseUser(tx, consumer, event, event.data.userId),
    );
    if (!counts) return 'duplicate';
    ctx.logger.info({ erasureId: event.data.erasureId, ...counts }, 'user erased');
    return 'processed';
  };
}
