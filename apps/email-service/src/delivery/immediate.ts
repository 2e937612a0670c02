import type { Logger } from 'pino';
import { TransientError, type MessageContext, type Outcome } from '@community/messaging';
import type { EventOf } from '@community/contracts';
import type { EmailMetrics } from '../metrics';
import type { CircuitBreaker } from '../smtp/breaker';
import type { Sender } from '../smtp/sender';
import type { LedgerStore, NewDelivery } from '../store/ledger';
import type { SuppressionStore } from '../store/suppressions';
import type { UsersStore } from '../store/users';
import { attemptSend } from './attempt';
import type { Composer } from './compose';

export interface ImmediateDeps {
  users: UsersStore;
  ledger: LedgerStore;
  suppressions: SuppressionStore;
  sender: Sender;
  breaker: CircuitBreaker;
  composer: Composer;
  metrics: EmailMetrics;
  logger: Logger;
  leaseMs: number;
  breakerMaxHoldMs: number;
  userGraceMs: number;
  now: () => Date;
}

/**
 * Sends one notification email, at most once per idempotency key:
 *
 * 1. No address yet: retry (transient) during the grace period, then record the row as failed with
 *    the reason and ack: a permanent, explained outcome, no crash, no DLQ (docs/EMAIL.md).
 * 2. Loop: wait while the breaker is open (the row waits as pending); check opt-outs; claim the
 *    row (created in, or moved to, sending). A row already sent is a duplicate delivery: ack, no
 *    email. A row another delivery is sending right now (live lease) is polled until it settles.
 * 3. Send under the lease. 5xx → failed + DLQ. Transient → back to pending; if that failure opened
 *    the breaker (or it was already open), hold the message and try again once it closes, so the
 *    outage costs no retry attempt; otherwise take a retry tier.
 */
export async function deliverImmediate(deps: ImmediateDeps, event: EventOf<'notification.created'>, ctx: MessageContext): Promise<Outcome> {
  const d = event.data;
  const row: NewDelivery = {
    idempotencyKey: d.idempotencyKey,
    channel: 'immediate',
    userId: d.userId,
    messageId: deps.composer.immediateMessageId(d.idempotencyKey),
    notificationType: d.type,
    notificationId: d.notificationId,
  };

  const people = await deps.users.getMany(d.actorId ? [d.userId, d.actorId] : [d.userId]);
  const user = people.get(d.userId);
  if (!user || user.email.trim() === '') {
    const waitedMs = deps.now().getTime() - Date.parse(event.occurredAt);
    if (!user && waitedMs < deps.userGraceMs) {
      throw new TransientError(`no address for user ${d.userId} yet (no user.upserted seen; ${Math.round(waitedMs / 1000)} s of the ${Math.round(deps.userGraceMs / 1000)} s grace)`, 'USER_UNKNOWN');
    }
    const reason = user ? `no_address: user ${d.userId} has an empty email address` : `no_address: no user.upserted for user ${d.userId} within the ${Math.round(deps.userGraceMs / 1000)} s grace period`;
    await deps.ledger.recordUndeliverable(row, reason);
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
  const locked = d.type === 'security_alert';
  let pollMs = 100;

  for (;;) {
    if (deps.breaker.isOpen()) {
      await deps.ledger.record(row);
      await deps.breaker.waitUntilClosed(ctx.signal, deps.breakerMaxHoldMs);
    }
    if (!locked && (await deps.suppressions.blocks(d.userId, [d.type], new Date(event.occurredAt)))) {
      await deps.ledger.recordSuppressed(row, 'opted out after the email was decided');
      deps.metrics.decisions.inc({ decision: 'suppressed' });
      return 'skipped';
    }
    const claim = await deps.ledger.claim(row, deps.leaseMs);
    if (!claim.claimed) {
      if (claim.state !== 'sending') return 'duplicate'; // sent or suppressed already: no second email
      // Another delivery of this key is sending (a concurrent duplicate), or crashed mid-send and
      // its lease has not expired yet. Poll until it settles or the lease can be taken over.
      await sleep(Math.min(pollMs, claim.msUntilLeaseExpiry + 10), ctx.signal);
      pollMs = Math.min(pollMs * 2, 2_000);
      continue;
    }
    const result = await attemptSend(deps, claim.lease, mail, 'immediate', ctx.signal);
    if (result.outcome === 'sent') return 'processed';
    await deps.ledger.release(claim.lease, result.error.message);
    if (!deps.breaker.isOpen()) throw result.error;
    ctx.logger.warn({ err: result.error.message }, 'send failed and the breaker is open: holding the message until it closes');
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
