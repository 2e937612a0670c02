import type { NotificationType } from '@community/contracts';
import { READ_STATE_MAX_KEYS } from '@community/service';
import { forEachLimit, type DigestJobDeps } from '../digest/digest-jobs';
import { digestRetryDelayMs } from '../domain/retry-schedules';
import { SmtpPermanentError } from '../smtp/errors';
import * as ledger from '../store/ledger';
import type { HeldLease } from '../store/ledger';
import * as suppressions from '../store/suppressions';
import * as users from '../store/users';
import { attemptSend } from './attempt';

/** notification-service's read state, as ReadStateClient (libs/service) answers it. */
export interface ReadState {
  readKeys(userId: string, idempotencyKeys: string[]): Promise<Set<string>>;
}

export interface HeldDeps extends DigestJobDeps {
  /** Delay-then-check on (EMAIL_READ_CHECK_DELAY_MS > 0): ask before sending. Absent: no check. */
  readState?: ReadState;
}

/** The ledger reason of an email not sent because its notification was read in the app first. */
export const READ_IN_APP_REASON = 'read_in_app: the notification was read in the app before the email was due';

/**
 * Sends the held immediate emails that are due (docs/EMAIL.md "Delivery timing"), a batch at a
 * time, like the digests: the ledger holds the schedule (`next_attempt_at`), retries back off there
 * (30 s doubling, DIGEST_MAX_ATTEMPTS, then failed), nothing is attempted while the breaker is open.
 * With delay-then-check on, each user's due keys are checked in one read-state call first; a key
 * read in the app is not sent (`suppressed`, READ_IN_APP_REASON); a check that fails sends them all
 * anyway (an email too many beats a lost one), logged and counted.
 */
export async function sendDueHeld(deps: HeldDeps, now: Date): Promise<number> {
  let sent = 0;
  while (!deps.breaker.isOpen()) {
    const leases = await ledger.claimDueHeld(deps.pool, now, deps.batchSize, deps.leaseMs, deps.holder);
    const byUser = new Map<string, HeldLease[]>();
    for (const l of leases) byUser.set(l.userId, [...(byUser.get(l.userId) ?? []), l]);
    await forEachLimit([...byUser.values()], deps.concurrency, async (mine) => {
      const read = await readKeys(deps, mine);
      for (const lease of mine) {
        if (await sendOne(deps, lease, read, now)) sent += 1;
      }
    });
    if (leases.length < deps.batchSize) break;
  }
  return sent;
}

/** The user's keys read in the app; empty when there is no check or it failed (then: send). */
async function readKeys(deps: HeldDeps, mine: HeldLease[]): Promise<Set<string>> {
  if (!deps.readState) return new Set();
  const userId = mine[0].userId;
  const read = new Set<string>();
  for (let i = 0; i < mine.length; i += READ_STATE_MAX_KEYS) {
    const keys = mine.slice(i, i + READ_STATE_MAX_KEYS).map((l) => l.idempotencyKey);
    try {
      for (const k of await deps.readState.readKeys(userId, keys)) read.add(k);
    } catch (err) {
      deps.metrics.readChecks.inc({ outcome: 'failed' }, keys.length);
      deps.logger.warn(
        { userId, keys: keys.length, err: (err as Error).message },
        'read-state check failed: sending the held emails anyway',
      );
      continue;
    }
    const readHere = keys.filter((k) => read.has(k)).length;
    deps.metrics.readChecks.inc({ outcome: 'read' }, readHere);
    deps.metrics.readChecks.inc({ outcome: 'unread' }, keys.length - readHere);
  }
  return read;
}

async function sendOne(deps: HeldDeps, lease: HeldLease, read: Set<string>, now: Date): Promise<boolean> {
  const log = deps.logger.child({ idempotencyKey: lease.idempotencyKey, deliveryId: lease.id });
  const n = lease.held;
  if (read.has(lease.idempotencyKey)) {
    await ledger.markSuppressed(deps.pool, lease, READ_IN_APP_REASON);
    deps.metrics.decisions.inc({ decision: 'read_in_app' });
    return false;
  }
  if (deps.breaker.isOpen()) {
    await ledger.release(deps.pool, lease, 'SMTP circuit breaker open', { refundAttempt: true });
    return false;
  }
  const people = await users.getMany(deps.pool, n.actorId ? [lease.userId, n.actorId] : [lease.userId]);
  const user = people.get(lease.userId);
  if (!user || user.email.trim() === '') {
    await ledger.markFailed(deps.pool, lease, `no_address: no address known for user ${lease.userId}`);
    deps.metrics.undeliverable.inc({ reason: user ? 'empty_address' : 'unknown_user' });
    log.warn('held email undeliverable: no address; recorded as failed');
    return false;
  }
  // The user may have opted out while it was held.
  if (await suppressions.blocks(deps.pool, lease.userId, [n.type], new Date(n.decidedAt))) {
    await ledger.markSuppressed(deps.pool, lease, 'opted out after the email was decided');
    deps.metrics.decisions.inc({ decision: 'suppressed' });
    return false;
  }
  const mail = deps.composer.notification(
    user,
    {
      type: n.type as NotificationType,
      notificationId: n.notificationId,
      actorName: n.actorId ? people.get(n.actorId)?.displayName : undefined,
      resourceType: n.resourceType,
      excerpt: n.excerpt,
    },
    lease.idempotencyKey,
  );
  try {
    const result = await attemptSend(deps, lease, mail, 'immediate');
    if (result.outcome === 'sent') return true;
    if (lease.attempts >= deps.maxAttempts) {
      await ledger.markFailed(deps.pool, lease, `gave up after ${lease.attempts} attempts: ${result.error.message}`);
      log.error({ err: result.error.message }, 'held email failed for good');
    } else {
      await ledger.release(deps.pool, lease, result.error.message, {
        nextAttemptAt: new Date(now.getTime() + digestRetryDelayMs(lease.attempts)),
        refundAttempt: deps.breaker.isOpen(),
      });
      log.warn({ err: result.error.message, attempts: lease.attempts }, 'held email send failed; rescheduled');
    }
  } catch (err) {
    if (!(err instanceof SmtpPermanentError)) throw err;
    log.error({ err: err.message }, 'held email refused by the SMTP server (permanent); recorded as failed');
  }
  return false;
}
