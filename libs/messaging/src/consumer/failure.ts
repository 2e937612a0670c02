import type { ConfirmChannel, ConsumeMessage, Message } from 'amqplib';
import { classify, errorClass, errorMessage, UnroutableError, type ErrorClassifier, type FailureKind } from '../errors';
import { dlqName, queueExchangeName, retryQueueName } from '../topology';
import { DEAD_LETTER_HEADERS as H, DELIVERY_COUNT_HEADER, numberHeader } from './headers';

export interface FailureRoute {
  destination: 'retry' | 'dlq';
  queue: string;
  /** The work queue's own exchange, which the copy goes through (bound to `queue` by its name). */
  exchange: string;
  kind: FailureKind;
  tierMs?: number;
}

/**
 * Where a failed delivery goes. Permanent → the DLQ at once. Transient → the tier for this attempt
 * (1st failure → tier 0, …); past the last tier → the DLQ.
 */
export function routeFailure(
  queue: string,
  retryDelaysMs: readonly number[],
  attempt: number,
  err: unknown,
  classifiers: readonly ErrorClassifier[] = [],
): FailureRoute {
  const kind = classify(err, classifiers);
  if (kind === 'transient' && attempt <= retryDelaysMs.length) {
    const tierMs = retryDelaysMs[attempt - 1];
    return {
      destination: 'retry',
      queue: retryQueueName(queue, tierMs),
      exchange: queueExchangeName(queue),
      kind,
      tierMs,
    };
  }
  return { destination: 'dlq', queue: dlqName(queue), exchange: queueExchangeName(queue), kind };
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
 * Returned copies per channel, keyed by message id and target queue. A basic.return arrives before
 * the basic.ack of the same message on the same channel, and confirms resolve in publish order, so
 * the first confirm for a key after its return is the returned copy's.
 */
const returns = new WeakMap<ConfirmChannel, Map<string, number>>();

const returnKey = (messageId: unknown, queue: string): string => `${String(messageId ?? '')}\u0000${queue}`;

function returnsOf(channel: ConfirmChannel): Map<string, number> {
  let pending = returns.get(channel);
  if (!pending) {
    const map = new Map<string, number>();
    channel.on('return', (returned: Message) => {
      const key = returnKey(returned.properties.messageId, returned.fields.routingKey);
      map.set(key, (map.get(key) ?? 0) + 1);
    });
    returns.set(channel, (pending = map));
  }
  return pending;
}

/** True once per returned copy: consumes the mark. */
function takeReturn(pending: Map<string, number>, key: string): boolean {
  const n = pending.get(key);
  if (!n) return false;
  if (n === 1) pending.delete(key);
  else pending.set(key, n - 1);
  return true;
}

/**
 * Publishes the copy on the consumer's own confirm channel and resolves on the broker's confirm.
 * Only then may the original be acked: ack first and a crash in between would lose the message.
 * Through the work queue's own direct exchange (`exchange`, bound to each queue of the group by its
 * name), straight to the retry/DLQ queue: never back via the topic exchange, and never through the
 * default exchange, which a broker user may write to only for every queue of the vhost at once.
 * The copy's `user-id` is this connection's user (`userId`): RabbitMQ refuses any other, and the
 * consumer that gets it back accepts its own user (docs/MESSAGING.md "Broker identity").
 * `mandatory`: a copy to a queue that does not exist is confirmed *and dropped* by the broker; it
 * rejects with UnroutableError instead, so the original is not acked.
 */
export function publishCopy(
  channel: ConfirmChannel,
  msg: ConsumeMessage,
  exchange: string,
  queue: string,
  headers: Record<string, unknown>,
  userId?: string,
): Promise<void> {
  const p = msg.properties;
  const pending = returnsOf(channel);
  const key = returnKey(p.messageId, queue);
  return new Promise((resolve, reject) => {
    channel.publish(
      exchange,
      queue,
      msg.content,
      {
        mandatory: true,
        persistent: true,
        contentType: p.contentType,
        contentEncoding: p.contentEncoding,
        messageId: p.messageId,
        correlationId: p.correlationId,
        type: p.type,
        timestamp: p.timestamp,
        appId: p.appId,
        ...(userId !== undefined ? { userId } : {}),
        headers,
      },
      (err) => {
        if (err) reject(err);
        else if (takeReturn(pending, key)) reject(new UnroutableError(exchange, queue, 'NO_ROUTE'));
        else resolve();
      },
    );
  });
}

export const attemptOf = (msg: ConsumeMessage): number => numberHeader(msg.properties.headers, H.retryAttempt) + 1;
export const deliveryCountOf = (msg: ConsumeMessage): number =>
  numberHeader(msg.properties.headers, DELIVERY_COUNT_HEADER) + 1;
