import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { PREFERENCE_LOCKED_TYPES, type EventOf } from '@community/contracts';
import { TransientError, type MessageContext, type Outcome } from '@community/messaging';
import { isFinal, next, startDelivery, type DeliveryStep, type StepResult } from '../domain/immediate-delivery';
import type { EmailMetrics } from '../metrics';
import type { CircuitBreaker } from '../smtp/breaker';
import type { OutgoingEmail, Sender } from '../smtp/sender';
import * as ledger from '../store/ledger';
import * as suppressions from '../store/suppressions';
import * as users from '../store/users';
import { attemptSend } from './attempt';
import type { Composer } from './compose';

export interface ImmediateDeps {
  pool: Pool;
  sender: Sender;
  breaker: CircuitBreaker;
  composer: Composer;
  metrics: EmailMetrics;
  logger: Logger;
  leaseMs: number;
  /** This process as a lease holder (delivery/holder.ts); absent: leases are only waited out. */
  holder?: ledger.LeaseHolder;
  breakerMaxHoldMs: number;
  userGraceMs: number;
  now: () => Date;
}

/**
 * Sends one notification email, at most once per idempotency key.
 *
 * No address yet: retry (transient) during the grace period, then record the row as failed with
 * the reason and ack: a permanent, explained outcome, no crash, no DLQ (docs/EMAIL.md). Otherwise
 * the state machine of domain/immediate-delivery.ts decides each step (hold for the breaker, check
 * opt-outs, claim, wait on another sender's lease, send, release) and this driver performs it.
 * Errors of the effects propagate as they are: a 5xx (the row is already failed), a hold that
 * outlasted its limit (BreakerOpenError), a database error.
 */
export async function deliverImmediate(
  deps: ImmediateDeps,
  event: EventOf<'notification.created'>,
  ctx: MessageContext,
): Promise<Outcome> {
  const d = event.data;
  const row: ledger.NewDelivery = {
    idempotencyKey: d.idempotencyKey,
    channel: 'immediate',
    userId: d.userId,
    messageId: deps.composer.immediateMessageId(d.idempotencyKey),
    notificationType: d.type,
    notificationId: d.notificationId,
  };

  const people = await users.getMany(deps.pool, d.actorId ? [d.userId, d.actorId] : [d.userId]);
  const user = people.get(d.userId);
  if (!user || user.email.trim() === '') {
    const waitedMs = deps.now().getTime() - Date.parse(event.occurredAt);
    if (!user && waitedMs < deps.userGraceMs) {
      throw new TransientError(
        `no address for user ${d.userId} yet (no user.upserted seen; ${Math.round(waitedMs / 1000)} s of the ${Math.round(deps.userGraceMs / 1000)} s grace)`,
        'USER_UNKNOWN',
      );
    }
    const reason = user
      ? `no_address: user ${d.userId} has an empty email address`
      : `no_address: no user.upserted for user ${d.userId} within the ${Math.round(deps.userGraceMs / 1000)} s grace period`;
    await ledger.recordUndeliverable(deps.pool, row, reason);
    deps.metrics.undeliverable.inc({ reason: user ? 'empty_address' : 'unknown_user' });
    ctx.logger.warn({ idempotencyKey: d.idempotencyKey, reason }, 'email undeliverable: recorded as failed');
    return 'skipped';
  }

  const actorName = d.actorId ? people.get(d.actorId)?.displayName : undefined;
  const mail = deps.composer.notification(
    user,
    { type: d.type, notificationId: d.notificationId, actorName, resourceType: d.resourceType, excerpt: d.excerpt },
    d.idempotencyKey,
  );
  const effects = { deps, row, mail, ctx, decidedAt: new Date(event.occurredAt), type: d.type };
  // Security alerts cannot be muted: opt-outs are never consulted for them.
  let state = startDelivery(!PREFERENCE_LOCKED_TYPES.includes(d.type), { breakerOpen: deps.breaker.isOpen() });
  while (!isFinal(state.step)) {
    const result = await perform(state.step, effects);
    state = next(state, result, { breakerOpen: deps.breaker.isOpen() });
  }
  if (state.step.kind === 'fail') throw state.step.error;
  return state.step.outcome;
}

interface Effects {
  deps: ImmediateDeps;
  row: ledger.NewDelivery;
  mail: OutgoingEmail;
  ctx: MessageContext;
  decidedAt: Date;
  type: string;
}

/** The side effect of one step; its result is all the state machine learns. */
async function perform(step: Exclude<DeliveryStep, { kind: 'done' | 'fail' }>, e: Effects): Promise<StepResult> {
  const { deps, row, ctx } = e;
  switch (step.kind) {
    case 'hold':
      if (step.after !== undefined)
        ctx.logger.warn(
          { err: step.after },
          'send failed and the breaker is open: holding the message until it closes',
        );
      await ledger.record(deps.pool, row);
      await deps.breaker.waitUntilClosed(ctx.signal, deps.breakerMaxHoldMs);
      return { kind: 'hold' };
    case 'check-opt-out':
      return {
        kind: 'check-opt-out',
        optedOut: await suppressions.blocks(deps.pool, row.userId, [e.type], e.decidedAt),
      };
    case 'suppress':
      await ledger.recordSuppressed(deps.pool, row, 'opted out after the email was decided');
      deps.metrics.decisions.inc({ decision: 'suppressed' });
      return { kind: 'suppress' };
    case 'claim': {
      const claim = await ledger.claim(deps.pool, row, deps.leaseMs, deps.holder);
      if (claim.claimed && claim.takeover) {
        deps.metrics.leaseTakeovers.inc({ reason: claim.takeover });
        ctx.logger.warn(
          {
            deliveryId: claim.lease.id,
            messageId: claim.lease.messageId,
            attempts: claim.lease.attempts,
            takeover: claim.takeover,
          },
          claim.takeover === 'holder_dead'
            ? 'took over the lease of a dead process (its heartbeat stopped): sending with the same Message-ID'
            : 'took over an expired lease: sending with the same Message-ID',
        );
      }
      return { kind: 'claim', claim };
    }
    case 'wait-lease':
      await sleep(step.ms, undefined, { signal: ctx.signal });
      return { kind: 'wait-lease' };
    case 'send':
      return { kind: 'send', result: await attemptSend(deps, step.lease, e.mail, 'immediate', ctx.signal) };
    case 'release':
      await ledger.release(deps.pool, step.lease, step.error.message);
      return { kind: 'release' };
  }
}
