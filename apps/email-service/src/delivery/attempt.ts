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
 * One SMTP attempt under a ledger lease. A 5xx marks the row failed and is rethrown (the caller
 * dead-letters it); a transient failure is returned for the caller to decide (hold for the breaker,
 * retry tier, or reschedule); success is recorded as 'sent'.
 *
 * THE DUPLICATE WINDOW: between the server's 250 reply to DATA and the commit of 'sent' below, the
 * email exists but the ledger still says 'sending'. A crash there leaves the row to expire and be
 * re-attempted with the same Message-ID. Everything here keeps that window to one UPDATE.
 */
export async function attemptSend(
  deps: { sender: Sender; pool: Pool; logger: Logger },
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
      await ledger.markFailed(deps.pool, lease, err.message);
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
async function markSentDurably(deps: { pool: Pool; logger: Logger }, lease: Lease, response: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const recorded = await ledger.markSent(deps.pool, lease, response);
      if (!recorded) {
        deps.logger.error(
          { deliveryId: lease.id, messageId: lease.messageId },
          'sent, but the lease had expired and was taken over: a second copy with the same Message-ID may go out',
        );
      }
      return;
    } catch (err) {
      if (attempt >= 4) throw err;
      deps.logger.warn({ err: (err as Error).message, attempt }, 'could not record sent; retrying');
      // 0.5 s, 1 s, 2 s: no jitter, only this process waits on this row.
      await sleep(backoffDelay(attempt, { baseMs: 250, maxMs: 2_000, jitter: 'none' }));
    }
  }
}
