import type { Logger } from 'pino';
import { SmtpPermanentError, type SmtpTransientError } from '../smtp/errors';
import type { OutgoingEmail, Sender } from '../smtp/sender';
import type { DeliveryChannel, Lease, LedgerStore } from '../store/ledger';

export type AttemptResult = { outcome: 'sent' } | { outcome: 'transient'; error: SmtpTransientError };

/**
 * One SMTP attempt under a ledger lease. A 5xx marks the row failed and is rethrown (the caller
 * dead-letters it); a transient failure is returned for the caller to decide (hold for the breaker,
 * retry tier, or reschedule); success is recorded as 'sent'.
 *
 * THE DUPLICATE WINDOW: between the server's 250 reply to DATA and the commit of 'sent' below, the
 * email exists but the ledger still says 'sending'. A crash there leaves the row to expire and be
 * re-attempted with the same Message-ID. Everything here keeps that window to one UPDATE.
 */
export async function attemptSend(
  deps: { sender: Sender; ledger: LedgerStore; logger: Logger },
  lease: Lease,
  mail: OutgoingEmail,
  channel: DeliveryChannel,
  signal?: AbortSignal,
): Promise<AttemptResult> {
  let response: string;
  try {
    ({ response } = await deps.sender.send(mail, channel, signal));
  } catch (err) {
    if (err instanceof SmtpPermanentError) {
      await deps.ledger.markFailed(lease, err.message);
      throw err;
    }
    return { outcome: 'transient', error: err as SmtpTransientError };
  }
  await markSentDurably(deps, lease, response);
  return { outcome: 'sent' };
}

/**
 * The email is out; losing this write would turn a redelivery into a second email. So a database
 * hiccup is retried a few times here (about 3 s) before giving up, rather than at once widening
 * the duplicate window to "until the lease expires".
 */
async function markSentDurably(deps: { ledger: LedgerStore; logger: Logger }, lease: Lease, response: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const recorded = await deps.ledger.markSent(lease, response);
      if (!recorded) {
        deps.logger.error({ deliveryId: lease.id, messageId: lease.messageId }, 'sent, but the lease had expired and was taken over: a second copy with the same Message-ID may go out');
      }
      return;
    } catch (err) {
      if (attempt >= 4) throw err;
      deps.logger.warn({ err: (err as Error).message, attempt }, 'could not record sent; retrying');
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}
