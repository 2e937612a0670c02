import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { PREFERENCE_LOCKED_TYPES, type EventOf } from '@community/contracts';
import { TransientError, type MessageContext, type Outcome } from '@community/messaging';
import {
  isFinal,
  next,
  startDelivery,
  type DeliveryStep,
  type Facts,
  type StepResult,
} from '../domain/immediate-delivery';
import { holdFor } from '../domain/delivery-timing';
import type { EmailMetrics } from '../metrics';
import { SmtpProviderUnavailableError } from '../smtp/errors';
import type { ProviderName } from '../smtp/provider-name';
import type { SmtpProviders } from '../smtp/providers';
import type { OutgoingEmail, Sender } from '../smtp/sender';
import * as ledger from '../store/ledger';
import * as suppressions from '../store/suppressions';
import * as users from '../store/users';
import { attemptSend } from './attempt';
import type { Composer } from './compose';

export interface ImmediateDeps {
  pool: Pool;
  sender: Sender;
  /** The SMTP providers as one breaker, with each provider's (smtp/providers.ts). */
  breaker: SmtpProviders;
  composer: Composer;
  metrics: EmailMetrics;
  logger: Logger;
  leaseMs: number;
  /** This process as a lease holder (delivery/holder.ts); absent: leases are only waited out. */
  holder?: ledger.LeaseHolder;
  breakerMaxHoldMs: number;
  userGraceMs: number;
  /** EMAIL_READ_CHECK_DELAY_MS: hold non-critical email this long after arrival, then check the read state (0: off). */
  readCheckDelayMs: number;
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
 *
 * Two providers (docs/EMAIL.md "Two providers"): the state machine's "breaker open" is, for this
 * email, "the provider it must or would go to cannot send now": the provider its row is bound to
 * (an earlier attempt there may have delivered it), else the provider of its last attempt (after a
 * failure: hold rather than spend a retry tier if that failure opened its breaker; the hold ends at
 * once when the other provider can take it), else every provider (the queues' breaker).
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

  // Quiet hours or delay-then-check (docs/EMAIL.md "Delivery timing"): the email waits in the
  // ledger and the ticker sends it when due (delivery/held.ts); this message is done.
  const hold = holdFor(d, deps.now(), deps.readCheckDelayMs);
  if (hold) {
    const held = await ledger.recordHeld(deps.pool, row, hold.until, {
      type: d.type,
      notificationId: d.notificationId,
      actorId: d.actorId,
      resourceType: d.resourceType,
      excerpt: d.excerpt,
      decidedAt: event.occurredAt,
    });
    if (!held) return 'duplicate';
    deps.metrics.held.inc({ reason: hold.reason });
    ctx.logger.debug({ idempotencyKey: d.idempotencyKey, until: hold.until, reason: hold.reason }, 'email held');
    return 'processed';
  }

  const actorName = d.actorId ? people.get(d.actorId)?.displayName : undefined;
  const mail = deps.composer.notification(
    user,
    { type: d.type, notificationId: d.notificationId, actorName, resourceType: d.resourceType, excerpt: d.excerpt },
    d.idempotencyKey,
  );
  const effects: Effects = {
    deps,
    row,
    mail,
    ctx,
    decidedAt: new Date(event.occurredAt),
    type: d.type,
    bound: null,
    lastProvider: undefined,
  };
  // Security alerts cannot be muted: opt-outs are never consulted for them.
  let state = startDelivery(!PREFERENCE_LOCKED_TYPES.includes(d.type), facts(effects));
  while (!isFinal(state.step)) {
    const result = await perform(state.step, effects);
    state = next(state, result, facts(effects));
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
  /** The provider the row is bound to, as last seen (a claim's lease, an attempt of unknown outcome). */
  bound: ProviderName | null;
  /** The provider of this delivery's last attempt. */
  lastProvider: ProviderName | undefined;
}

/** "The breaker is open" for this email (see deliverImmediate). */
function facts(e: Effects): Facts {
  const provider = e.bound ?? e.lastProvider;
  return { breakerOpen: provider === undefined ? e.deps.breaker.isOpen() : !e.deps.breaker.canSend(provider) };
}

/** The side effect of one step; its result is all the state machine learns. */
async function perform(step: Exclude<DeliveryStep, { kind: 'done' | 'fail' }>, e: Effects): Promise<StepResult> {
  const { deps, row, ctx } = e;
  switch (step.kind) {
    case 'hold': {
      const bound = e.bound ?? undefined;
      if (step.after !== undefined)
        ctx.logger.warn({ err: step.after, provider: e.lastProvider, bound }, holdReason(e));
      await ledger.record(deps.pool, row);
      // Bound: only that provider may send it. Otherwise any provider that can.
      await deps.breaker.waitUntilClosed(ctx.signal, deps.breakerMaxHoldMs, bound);
      return { kind: 'hold' };
    }
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
      const claim = await ledger.claim(
        deps.pool,
        row,
        deps.leaseMs,
        deps.holder,
        deps.breaker.preferred() ?? 'primary',
      );
      if (claim.claimed) {
        e.bound = claim.lease.pinned ?? null;
        e.lastProvider = claim.lease.provider;
      }
      if (claim.claimed && claim.takeover) {
        deps.metrics.leaseTakeovers.inc({ reason: claim.takeover });
        ctx.logger.warn(
          {
            deliveryId: claim.lease.id,
            messageId: claim.lease.messageId,
            attempts: claim.lease.attempts,
            takeover: claim.takeover,
            provider: claim.lease.provider,
          },
          claim.takeover === 'holder_dead'
            ? `took over the lease of a dead process (its heartbeat stopped): sending with the same Message-ID through the same provider (${claim.lease.provider})`
            : `took over an expired lease: sending with the same Message-ID through the same provider (${claim.lease.provider})`,
        );
      }
      return { kind: 'claim', claim };
    }
    case 'wait-lease':
      await sleep(step.ms, undefined, { signal: ctx.signal });
      return { kind: 'wait-lease' };
    case 'send': {
      const result = await attemptSend(deps, step.lease, e.mail, 'immediate', ctx.signal);
      e.bound = step.lease.pinned ?? null;
      return { kind: 'send', result };
    }
    case 'release':
      // Refused before any SMTP (its provider's breaker is open): the attempt is given back.
      await ledger.release(deps.pool, step.lease, step.error.message, {
        refundAttempt: step.error instanceof SmtpProviderUnavailableError,
      });
      return { kind: 'release' };
  }
}

/** The log line of a hold after a failed attempt: what it waits for. */
function holdReason(e: Effects): string {
  const { breaker } = e.deps;
  if (e.bound !== null)
    return `send not done and the ${e.bound} provider's breaker is open: this email may only go out through ${e.bound} (an earlier attempt there may have delivered it), holding it until that breaker closes`;
  if (breaker.isOpen()) return 'send failed and the breaker is open: holding the message until it closes';
  return `send failed and the ${e.lastProvider ?? 'primary'} provider's breaker is open: sending through ${breaker.preferred() ?? 'the next provider'} instead`;
}
