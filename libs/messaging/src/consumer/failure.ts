import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { classify, errorClass, errorMessage, type ErrorClassifier, type FailureKind } from '../errors';
import { dlqName, retryQueueName } from '../topology';
import { DEAD_LETTER_HEADERS as H, DELIVERY_COUNT_HEADER, numberHeader } from './headers';

export interface FailureRoute {
  destination: 'retry' | 'dlq';
  queue: string;
  kind: FailureKind;
  tierMs?: number;
}

/**
 * Where a failed delivery goes. Permanent → the DLQ at once. Transient → the tier for this attempt
 * (1st failure → tier 0, …); past the last tier → the DLQ.
 */
export function routeFailure(queue: string, retryDelaysMs: readonly number[], attempt: number, err: unknown, classifiers: readonly ErrorClassifier[] = []): FailureRoute {
  const kind = classify(err, classifiers);
  if (kind === 'transient' && attempt <= retryDelaysMs.length) {
    const tierMs = retryDelaysMs[attempt - 1];
    return { destination: 'retry', queue: retryQueueName(queue, tierMs), kind, tierMs };
  }
  return { destination: 'dlq', queue: dlqName(queue), kind };
}

export interface FailureFacts {
  queue: string;
  handler: string;
  attempt: number;
  err: unknown;
  now?: Date;
}

/** The headers of the copy that goes to a retry tier or the DLQ. */
export function failureHeaders(msg: ConsumeMessage, route: FailureRoute, facts: FailureFacts): Record<string, unknown> {
  const now = (facts.now ?? new Date()).toISOString();
  // x-death and x-delivery-count belong to the broker's view of the previous copy; the new copy
  // starts fresh, its history lives in our own headers.
  const { 'x-death': _death, [DELIVERY_COUNT_HEADER]: _count, ...kept } = msg.properties.headers ?? {};
  const previous = msg.properties.headers ?? {};
  const headers: Record<string, unknown> = {
    ...kept,
    [H.firstFailureAt]: previous[H.firstFailureAt] ?? now,
    [H.originalRoutingKey]: previous[H.originalRoutingKey] ?? msg.fields.routingKey,
    [H.originalExchange]: previous[H.originalExchange] ?? msg.fields.exchange,
    [H.retryAttempt]: facts.attempt,
    [H.lastErrorClass]: errorClass(facts.err),
    [H.lastErrorMessage]: errorMessage(facts.err, 500),
  };
  if (route.destination === 'dlq') {
    Object.assign(headers, {
      [H.errorClass]: errorClass(facts.err),
      [H.errorMessage]: errorMessage(facts.err, 1000),
      [H.errorKind]: route.kind === 'permanent' ? 'permanent' : 'retries-exhausted',
      [H.attempts]: facts.attempt,
      [H.originalQueue]: facts.queue,
      [H.handler]: facts.handler,
      [H.deadLetteredAt]: now,
    });
  }
  return headers;
}

/**
 * Publishes the copy on the consumer's own confirm channel and resolves on the broker's confirm.
 * Only then may the original be acked: ack first and a crash in between would lose the message.
 * Through the default exchange, straight to the retry/DLQ queue: never back via the topic exchange.
 */
export function publishCopy(channel: ConfirmChannel, msg: ConsumeMessage, queue: string, headers: Record<string, unknown>): Promise<void> {
  const p = msg.properties;
  return new Promise((resolve, reject) => {
    channel.publish(
      '',
      queue,
      msg.content,
      {
        persistent: true,
        contentType: p.contentType,
        contentEncoding: p.contentEncoding,
        messageId: p.messageId,
        correlationId: p.correlationId,
        type: p.type,
        timestamp: p.timestamp,
        appId: p.appId,
        headers,
      },
      (err) => (err ? reject(err) : resolve()),
    );
  });
}

export const attemptOf = (msg: ConsumeMessage): number => numberHeader(msg.properties.headers, H.retryAttempt) + 1;
export const deliveryCountOf = (msg: ConsumeMessage): number => numberHeader(msg.properties.headers, DELIVERY_COUNT_HEADER) + 1;
