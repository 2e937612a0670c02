import type { Pool } from 'pg';
import { pushFor, type EventOf } from '@community/contracts';
import { withTransaction } from '@community/db';
import type { Handler } from '@community/messaging';
import { deliver, type DeliverDeps } from '../delivery/deliver';
import { topicFor, TTL_SECONDS, URGENCY } from '../domain/delivery';
import { formatPush, groupOf } from '../domain/payload';
import { holdUntil } from '../domain/timing';
import type { PushMetrics } from '../metrics';
import * as ledger from '../store/ledger';

export interface CreatedDeps {
  pool: Pool;
  metrics: PushMetrics;
  deliver: DeliverDeps;
  leaseMs: number;
  publicBaseUrl: string;
  /** notification.created older than this is refused: its ledger rows may have been purged. */
  maxEventAgeMs: number;
  /** PUSH_READ_CHECK_DELAY_MS: hold every push but a security alert this long (0: off). */
  readCheckDelayMs: number;
  now: () => Date;
}

/**
 * `push-service.send`: notification.created. Decides (push or not: the event's `push`, or for an
 * event without it the rule of pushFor), writes one ledger row per subscription of the user in
 * one transaction (a group's member with the group's count so far in its title), then sends the rows it created; rows held (quiet hours, delay-then-check:
 * domain/timing.ts) are due at the hold's end, and the poller sends them then. A second delivery of the same notification
 * creates no row and sends nothing; a row left unsent by a crash or a retry is the poller's.
 */
export function notificationCreatedHandler(deps: CreatedDeps): Handler<EventOf<'notification.created'>> {
  return async (event, ctx) => {
    const d = event.data;
    const count = (outcome: string) => deps.metrics.decisions.inc({ type: d.type, outcome });
    const received = deps.now();
    if (received.getTime() - Date.parse(event.occurredAt) > deps.maxEventAgeMs) {
      count('too_old');
      ctx.logger.warn({ occurredAt: event.occurredAt }, 'notification.created past the retention window: not pushed');
      return 'skipped';
    }
    if (!pushFor(d.type, d.push)) {
      count('push_off');
      return 'skipped';
    }
    const hold = holdUntil(d, received, deps.readCheckDelayMs);
    // A mention or an alert never groups, whatever the event carries (docs/PUSH.md "Grouped pushes").
    const groupKey = groupOf(d);
    const decided = await withTransaction(deps.pool, { signal: ctx.signal }, (tx) =>
      ledger.decide(tx, {
        idempotencyKey: d.idempotencyKey,
        userId: d.userId,
        notificationId: d.notificationId,
        notificationType: d.type,
        groupKey,
        actorId: d.actorId,
        // A group's members share the Topic as they share the payload's tag: a push service still
        // holding the previous member replaces it, as the device replaces the one it shows.
        topic: topicFor(groupKey ?? d.idempotencyKey),
        ttlSeconds: TTL_SECONDS[d.type],
        urgency: URGENCY[d.type],
        // The title counts the group so far, from the ledger (store/ledger.ts decide).
        payload: (group) => formatPush(d, deps.publicBaseUrl, group),
        dueAt: hold ?? received,
      }),
    );
    if (decided.subscriptions === 0) {
      count('no_subscriptions');
      return 'skipped';
    }
    if (decided.withdrawn) {
      count('withdrawn');
      ctx.logger.info({ idempotencyKey: d.idempotencyKey }, 'notification withdrawn before its push: not pushed');
      return 'skipped';
    }
    if (decided.created.length === 0) {
      count('duplicate');
      return 'duplicate';
    }
    if (hold) {
      count('held');
      ctx.logger.debug({ idempotencyKey: d.idempotencyKey, until: hold.toISOString() }, 'push held');
      return 'processed';
    }
    count('queued');
    await deliver(deps.deliver, await ledger.claimRows(deps.pool, decided.created, deps.leaseMs, received), ctx.signal);
    return 'processed';
  };
}
