/**
 * Headers the runtime writes. A retried message carries its history; a dead-lettered one says why,
 * so an operator reading the DLQ in the management UI (or the reconciler console) needs nothing else.
 */
export const H = {
  /** Failed attempts so far (the next delivery is attempt H.retryAttempt + 1). */
  retryAttempt: 'x-retry-attempt',
  firstFailureAt: 'x-first-failure-at',
  lastErrorClass: 'x-last-error-class',
  lastErrorMessage: 'x-last-error-message',
  originalRoutingKey: 'x-original-routing-key',
  originalExchange: 'x-original-exchange',

  errorClass: 'x-error-class',
  errorMessage: 'x-error-message',
  errorKind: 'x-error-kind',
  attempts: 'x-attempts',
  originalQueue: 'x-original-queue',
  handler: 'x-handler',
  deadLetteredAt: 'x-dead-lettered-at',
  schemaVersion: 'x-schema-version',
  /** Set by RabbitMQ on quorum queues from the second delivery on. */
  deliveryCount: 'x-delivery-count',
} as const;

export function numberHeader(headers: Record<string, unknown> | undefined, name: string): number {
  const v = headers?.[name];
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : 0;
}
