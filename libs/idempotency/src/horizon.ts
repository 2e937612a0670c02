/**
 * How long after its first delivery a copy of a message can still reach a consumer through the
 * messaging runtime alone (docs/DATABASE.md, "Retention"). A retention horizon shorter than this
 * reopens the door to a copy that is still on its way; these are the bounded ways:
 *
 *  - every delayed-retry tier, one after the other (a transient failure moves the message to the
 *    next tier, whose TTL brings it back);
 *  - at each attempt (the first and one per tier), up to `deliveryLimit` deliveries of the same copy
 *    (a consumer that crashed, a channel lost, a graceful stop), each running to its handler deadline.
 *
 * The unbounded ways are not covered by any horizon and need a guard of their own: a copy waiting in
 * a backlog, a relay that re-publishes after a lost confirm once its process is back days later, and
 * a DLQ replay. The consumer's business idempotency key (never purged) or a refusal of messages older
 * than the horizon (email-service) covers those.
 */
export interface RedeliveryPath {
  /** The work queue's delayed-retry tiers, in ms (topology `retryDelaysMs`). */
  retryDelaysMs: readonly number[];
  /** Deliveries of one copy before the broker dead-letters it (topology `deliveryLimit`). */
  deliveryLimit: number;
  /** The consumer's handler deadline (per message or per batch). */
  handlerTimeoutMs: number;
}

export function longestRedeliveryMs(path: RedeliveryPath): number {
  const tiers = path.retryDelaysMs.reduce((sum, d) => sum + d, 0);
  const attempts = path.retryDelaysMs.length + 1;
  return tiers + attempts * Math.max(1, path.deliveryLimit) * path.handlerTimeoutMs;
}
