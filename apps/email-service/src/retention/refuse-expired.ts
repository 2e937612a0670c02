import { PermanentError, type Middleware } from '@community/messaging';

/**
 * Refuses a message older than the acceptance window, before it can send anything.
 *
 * The ledger row (email_deliveries, unique per idempotency key) and the digest item are this
 * service's only proof that an email already went out, and retention deletes them after the
 * horizon. A copy that arrives later (a DLQ replay, a producer's relay back after a long outage,
 * a backlog) would find no row and send the email a second time. Every copy of an event carries
 * the same occurredAt, so refusing by age closes the door for all of them at once. It is
 * dead-lettered with the code EVENT_EXPIRED: visible, and replaying it changes nothing.
 */
export function refuseExpiredEvents<E extends { id: string; occurredAt: string }>(
  maxAgeMs: number,
  now: () => Date,
): Middleware<E> {
  return (handler) => async (event, ctx) => {
    const ageMs = now().getTime() - Date.parse(event.occurredAt);
    if (!(ageMs <= maxAgeMs)) {
      throw new PermanentError(
        `event ${event.id} occurred ${Math.floor(ageMs / 3_600_000)} h ago, beyond the ${Math.floor(maxAgeMs / 3_600_000)} h acceptance window: ` +
          'its ledger row may have been purged by retention, so sending could duplicate an email (docs/EMAIL.md, "Retention")',
        'EVENT_EXPIRED',
      );
    }
    return handler(event, ctx);
  };
}
