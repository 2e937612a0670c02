import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import type { Acker } from './acker';
import type { MessageContext } from './types';
import { attemptOf, deliveryCountOf } from './failure';

/** One message as received, bound to the channel it came on (acks must go back on that channel). */
export interface Delivery<E> {
  channel: ConfirmChannel;
  acker: Acker;
  msg: ConsumeMessage;
  receivedAt: number;
  /** Set once parsed; undefined when the body failed validation. */
  event?: E;
  ctx: MessageContext;
  settled: boolean;
}

export function contextFor(msg: ConsumeMessage, base: Logger, queue: string, handler: string, signal: AbortSignal): MessageContext {
  const eventId = String(msg.properties.messageId ?? '');
  const correlationId = String(msg.properties.correlationId ?? eventId);
  const attempt = attemptOf(msg);
  let logger: Logger | undefined;
  return {
    // Created on first use: a pino child per message costs more than the rest of the runtime's
    // per-message work, and most successful messages never log.
    get logger() {
      return (logger ??= base.child({ eventId, correlationId, attempt, messageType: msg.properties.type }));
    },
    signal,
    attempt,
    deliveryCount: deliveryCountOf(msg),
    queue,
    handler,
    eventId,
    correlationId,
  };
}

/** Seconds from the event's occurrence (envelope) or the AMQP timestamp to now. */
export function lagSeconds(msg: ConsumeMessage, event: unknown, now: number): number | undefined {
  const occurredAt = (event as { occurredAt?: unknown } | undefined)?.occurredAt;
  const t = typeof occurredAt === 'string' ? Date.parse(occurredAt) : (msg.properties.timestamp ?? 0) * 1000;
  return Number.isFinite(t) && t > 0 ? Math.max(0, (now - t) / 1000) : undefined;
}
