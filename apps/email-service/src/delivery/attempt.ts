import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { backoffDelay } from '@community/messaging';
import { SmtpPermanentError, type SmtpTransientError } from '../smtp/errors';
import type { OutgoingEmail, Sender } from '../smtp/sender';
import * as ledger from '../store/ledger';
import type { DeliveryChannel, Lease } from '../store/ledger';

export type AttemptResult = { outcome: 'sent' } | { outcome: 'transient'; error: SmtpTransientError };

/**
 * One SMTP attempt under a ledger lease, through the provider the claim bound it to
 * (`lease.provider`: never another one). A 5xx marks the row failed and is rethrown (the caller
 * dead-letters it); a transient failure is returned for the caller to decide (hold for the breaker,
 * retry tier, or reschedule); success is recorded as 'sent', with its provider, in one write.
 *
 * A transient failure whose outcome is unknown (the whole message went out and no reply came: the
 * provider may have accepted it) binds the row to that provider for good, here, before the caller
 * releases the lease: whoever releases it (the immediate driver, the digest job) and whatever the
 * breakers say next, no later attempt can go to the other provider (docs/EMAIL.md "Two providers").
 * `lease.pinned` is updated for the caller.
 *
 * THE DUPLICATE WINDOW: between the server's 250 reply to DATA and the commit of 'sent' below, the
 * email exists but the ledger still says 'sending'. A crash there leaves the row to expire and be
 * re-attempted with the same Message-ID, through the same provider. Everything here keeps that
 * window to one UPDATE.
 */
export async function attemptSend(
  deps: { sender: Sender; pool: Pool; logger: Logger },
  lease: Lease,
  mail: OutgoingEmail,
  channel: DeliveryChannel,
  signal?: AbortSignal,
): Promise<AttemptResult> {
  let response: string;
  // The claim named it; a lease without one (none comes from the ledger) would go to the primary.
  const provider = (lease.provider ??= 'primary');
  try {
    ({ response } = await deps.sender.send(mail, channel, signal, provider));
  } catch (err) {
    if (err instanceof SmtpPermanentError) {
      await ledger.markFailed(deps.pool, lease, err.message);
      throw err;
    }
    const error = err as SmtpTransientError;
    if (error.outcomeUnknown === true) {
      await durably(deps, 'bind the email to its provider', () => ledger.bindToAttemptProvider(deps.pool, lease));
      lease.pinned = provider;
      deps.logger.warn(
        { deliveryId: lease.id, messageId: lease.messageId, provider, err: error.message },
        `no answer after the whole message went to the ${provider} provider: it may have been accepted, so only ${provider} may send this email again`,
      );
    }
    return { outcome: 'transient', error };
  }
  const recorded = await durably(deps, 'record sent', () => ledger.markSent(deps.pool, lease, response));
  if (!recorded) {
    deps.logger.error(
      { deliveryId: lease.id, messageId: lease.messageId, provider: lease.provider },
      'sent, but the lease had expired and was taken over: a second copy with the same Message-ID may go out',
    );
  }
  return { outcome: 'sent' };
}

/**
 * A write that must not be lost to a database hiccup: losing 'sent' would turn a redelivery into a
 * second email, losing the provider binding could let the other provider send one. So it is retried
 * a few times here (about 3 s) before giving up, rather than at once widening the window to "until
 * the lease expires". If it still fails, the error propagates and the row stays 'sending' under this
 * lease: the sender that takes it over then binds it to this attempt's provider anyway.
 */
async function durably<T>(deps: { logger: Logger }, what: string, write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= 4) throw err;
      deps.logger.warn({ err: (err as Error).message, attempt }, `could not ${what}; retrying`);
      // 0.5 s, 1 s, 2 s: no jitter, only this process waits on this row.
      await sleep(backoffDelay(attempt, { baseMs: 250, maxMs: 2_000, jitter: 'none' }));
    }
  }
}
