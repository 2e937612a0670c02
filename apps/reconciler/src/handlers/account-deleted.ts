import type { Pool } from 'pg';
import type { EventOf } from '@community/contracts';
import type { Handler } from '@community/messaging';
import { requestErasure } from '../store/erasures';

/**
 * reconciler.account-deletions: a user deleted their account (user.deleted, from the community
 * API). It becomes an erasure exactly as an operator's `ops user erase` does (one mechanism): the
 * audit row and user.erased in the outbox in one transaction (store/erasures.ts), with cause
 * `account_deleted`, so every service also withdraws what the user caused for others.
 *
 * The request key is the event's id: a redelivered user.deleted finds the first audit row and
 * publishes nothing more ('duplicate').
 */
export function accountDeletedHandler(deps: { pool: Pool; producer: string }): Handler<EventOf<'user.deleted'>> {
  return async (event, ctx) => {
    const result = await requestErasure(deps.pool, {
      requestKey: `user.deleted:${event.id}`,
      userId: event.data.userId,
      requestedBy: `account deletion (user.deleted from ${event.producer})`,
      producer: deps.producer,
      cause: 'account_deleted',
    });
    if (result.kind === 'key-reused') {
      // Cannot happen for a well-formed event (one id, one user); refuse rather than guess.
      throw new Error(`user.deleted ${event.id}: its erasure key belongs to user ${result.erasure.userId}`);
    }
    ctx.logger.info(
      { erasureId: result.erasure.erasureId, userId: event.data.userId, replayed: result.kind === 'replayed' },
      'account deletion recorded as an erasure',
    );
    return result.kind === 'created' ? 'processed' : 'duplicate';
  };
}
