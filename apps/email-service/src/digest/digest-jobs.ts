import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { attemptSend } from '../delivery/attempt';
import type { Composer } from '../delivery/compose';
import type { EmailMetrics } from '../metrics';
import type { CircuitBreaker } from '../smtp/breaker';
import { SmtpPermanentError } from '../smtp/errors';
import type { Sender } from '../smtp/sender';
import { digestRetryDelayMs } from '../domain/retry-schedules';
import * as digests from '../store/digests';
import * as ledger from '../store/ledger';
import type { DigestLease, LeaseHolder } from '../store/ledger';
import * as users from '../store/users';
import type { NotificationView } from '../templates/notification';

export interface DigestJobDeps {
  pool: Pool;
  sender: Sender;
  breaker: CircuitBreaker;
  composer: Composer;
  metrics: EmailMetrics;
  logger: Logger;
  leaseMs: number;
  /** This process as a lease holder (delivery/holder.ts); absent: leases are only waited out. */
  holder?: LeaseHolder;
  maxAttempts: number;
  batchSize: number;
  /** Digest sends running at once (the rate limiter paces them anyway). */
  concurrency: number;
}

/** Closes every due window, a batch per transaction, until none is left. */
export async function flushDueWindows(deps: DigestJobDeps, now: Date): Promise<{ flushed: number; empty: number }> {
  const total = { flushed: 0, empty: 0 };
  for (;;) {
    const r = await digests.flushDue(deps.pool, now, deps.batchSize, (key) => deps.composer.digestMessageId(key));
    total.flushed += r.flushed;
    total.empty += r.empty;
    deps.metrics.digestWindows.inc({ outcome: 'flushed' }, r.flushed);
    deps.metrics.digestWindows.inc({ outcome: 'empty' }, r.empty);
    if (r.flushed + r.empty < deps.batchSize) return total;
  }
}

/**
 * Sends the digest deliveries that are due. The broker is not involved (no message carries a
 * digest), so retries live in the ledger: `next_attempt_at` with backoff, `DIGEST_MAX_ATTEMPTS`,
 * then failed. Nothing is attempted while the breaker is open.
 */
export async function sendDueDigests(deps: DigestJobDeps, now: Date): Promise<number> {
  let sent = 0;
  while (!deps.breaker.isOpen()) {
    const leases = await ledger.claimDueDigests(deps.pool, now, deps.batchSize, deps.leaseMs, deps.holder);
    await forEachLimit(leases, deps.concurrency, async (lease) => {
      if (await sendOne(deps, lease, now)) sent += 1;
    });
    if (leases.length < deps.batchSize) break;
  }
  return sent;
}

async function sendOne(deps: DigestJobDeps, lease: DigestLease, now: Date): Promise<boolean> {
  const log = deps.logger.child({ idempotencyKey: lease.idempotencyKey, deliveryId: lease.id });
  if (deps.breaker.isOpen()) {
    await ledger.release(deps.pool, lease, 'SMTP circuit breaker open', { refundAttempt: true });
    return false;
  }
  const user = await users.get(deps.pool, lease.userId);
  if (!user || user.email.trim() === '') {
    await ledger.markFailed(deps.pool, lease, `no_address: no address known for user ${lease.userId}`);
    deps.metrics.undeliverable.inc({ reason: user ? 'empty_address' : 'unknown_user' });
    log.warn('digest undeliverable: no address; recorded as failed');
    return false;
  }
  const items = lease.digestWindowId ? await digests.liveItems(deps.pool, lease.digestWindowId) : [];
  if (items.length === 0) {
    await ledger.markSuppressed(deps.pool, lease, 'every item of the window was opted out before sending');
    return false;
  }
  const names = await users.displayNames(
    deps.pool,
    items.flatMap((i) => (i.actorId ? [i.actorId] : [])),
  );
  const views: NotificationView[] = items.map((i) => ({
    type: i.notificationType,
    notificationId: i.notificationId,
    actorName: i.actorId ? names.get(i.actorId) : undefined,
    actorId: i.actorId,
    resourceType: i.resourceType,
    excerpt: i.excerpt ?? undefined,
    groupKey: i.groupKey,
  }));
  const mail = deps.composer.digest(user, views, lease.idempotencyKey);
  try {
    const result = await attemptSend(deps, lease, mail, 'digest');
    if (result.outcome === 'sent') return true;
    if (lease.attempts >= deps.maxAttempts) {
      await ledger.markFailed(deps.pool, lease, `gave up after ${lease.attempts} attempts: ${result.error.message}`);
      log.error({ err: result.error.message }, 'digest failed for good');
    } else {
      // An attempt refused because the provider is down (the breaker opened) is not counted.
      const refundAttempt = deps.breaker.isOpen();
      await ledger.release(deps.pool, lease, result.error.message, {
        nextAttemptAt: new Date(now.getTime() + digestRetryDelayMs(lease.attempts)),
        refundAttempt,
      });
      log.warn({ err: result.error.message, attempts: lease.attempts }, 'digest send failed; rescheduled');
    }
  } catch (err) {
    if (!(err instanceof SmtpPermanentError)) throw err;
    log.error({ err: err.message }, 'digest refused by the SMTP server (permanent); recorded as failed');
  }
  return false;
}

/** Runs `fn` over `items`, at most `limit` at a time (the ticker's sends). */
export async function forEachLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  });
  await Promise.all(workers);
}
