/**
 * The headers a dead-lettered message carries, so an operator reading the DLQ (management UI, the
 * reconciler console) needs nothing else. A copy sent to a retry tier carries the first six: its
 * history so far.
 */
export const DEAD_LETTER_HEADERS = {
  /** Failed attempts so far (the next delivery is attempt `retryAttempt` + 1). */
  retryAttempt: 'x-retry-attempt',
  firstFailureAt: 'x-first-failure-at',
  lastErrorClass: 'x-last-error-class',
  lastErrorMessage: 'x-last-error-message',
  originalRoutingKey: 'x-original-routing-key',
  originalExchange: 'x-original-exchange',

  errorClass: 'x-error-class',
  errorMessage: 'x-error-message',
  /** `permanent` or `retries-exhausted`. */
  errorKind: 'x-error-kind',
  attempts: 'x-attempts',
  originalQueue: 'x-original-queue',
  handler: 'x-handler',
  deadLetteredAt: 'x-dead-lettered-at',
} as const;

/** Set by RabbitMQ on quorum queues from the second delivery on. */
export const DELIVERY_COUNT_HEADER = 'x-delivery-count';

export function numberHeader(headers: Record<string, unknown> | undefined, name: string): number {
  const v = headers?.[name];
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : 0;
}
