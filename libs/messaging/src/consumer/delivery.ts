import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import type { Acker } from './acker';
import { attemptOf, deliveryCountOf } from './failure';
import type { MessageContext } from './types';

/** Where the runtime's own middleware find the delivery behind a context. Not exported: handlers never see it. */
export const DELIVERY: unique symbol = Symbol('messaging.delivery');

/** One message as received, bound to the channel it came on (acks and copies must go back on that channel). */
export interface Delivery {
  readonly channel: ConfirmChannel;
  readonly acker: Acker;
  readonly msg: ConsumeMessage;
  /** Epoch ms. */
  readonly receivedAt: number;
  readonly ctx: RuntimeContext;
  settled: boolean;
}

/** The context the runtime builds: a MessageContext that also leads back to its delivery. */
export interface RuntimeContext extends MessageContext {
  readonly [DELIVERY]: Delivery;
}

export interface Receipt {
  channel: ConfirmChannel;
  acker: Acker;
  msg: ConsumeMessage;
  /** The consumer's logger (queue and handler bound); the log-context middleware adds the message's fields. */
  logger: Logger;
  queue: string;
  handler: string;
  /** The consumer's shutdown signal; the deadline middleware derives each handler's own from it. */
  signal: AbortSignal;
}

export function newDelivery(r: Receipt): Delivery {
  const eventId = String(r.msg.properties.messageId ?? '');
  const ctx = {
    logger: r.logger,
    signal: r.signal,
    attempt: attemptOf(r.msg),
    deliveryCount: deliveryCountOf(r.msg),
    queue: r.queue,
    handler: r.handler,
    eventId,
    correlationId: String(r.msg.properties.correlationId ?? eventId),
  } as MessageContext as { -readonly [K in keyof RuntimeContext]: RuntimeContext[K] };
  const delivery: Delivery = {
    channel: r.channel,
    acker: r.acker,
    msg: r.msg,
    receivedAt: Date.now(),
    ctx,
    settled: false,
  };
  ctx[DELIVERY] = delivery;
  return delivery;
}

/**
 * The same context with another signal and/or logger, both read lazily. A small class rather than `Object.create` with
 * property descriptors or a spread: this runs twice per message, descriptor objects put V8 in its
 * slow dictionary mode, and a spread would evaluate the lazy logger and signal.
 */
export function deriveContext(
  ctx: MessageContext,
  change: { signal?: () => AbortSignal; logger?: () => Logger },
): RuntimeContext {
  return new DerivedContext(ctx, change.signal ?? (() => ctx.signal), change.logger ?? (() => ctx.logger));
}

class DerivedContext implements RuntimeContext {
  readonly attempt: number;
  readonly deliveryCount: number;
  readonly queue: string;
  readonly handler: string;
  readonly eventId: string;
  readonly correlationId: string;
  readonly [DELIVERY]: Delivery;

  constructor(
    base: MessageContext,
    private readonly signalOf: () => AbortSignal,
    private readonly loggerOf: () => Logger,
  ) {
    this.attempt = base.attempt;
    this.deliveryCount = base.deliveryCount;
    this.queue = base.queue;
    this.handler = base.handler;
    this.eventId = base.eventId;
    this.correlationId = base.correlationId;
    // Kept through an app's middleware too, for the batch runner and the shutdown path.
    this[DELIVERY] = (base as Partial<RuntimeContext>)[DELIVERY] as Delivery;
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  get logger(): Logger {
    return this.loggerOf();
  }
}

/** Seconds from the event's occurrence (envelope) or the AMQP timestamp to `now`. */
export function lagSeconds(msg: ConsumeMessage, event: unknown, now: number): number | undefined {
  const occurredAt = (event as { occurredAt?: unknown } | undefined)?.occurredAt;
  const t = typeof occurredAt === 'string' ? Date.parse(occurredAt) : (msg.properties.timestamp ?? 0) * 1000;
  return Number.isFinite(t) && t > 0 ? Math.max(0, (now - t) / 1000) : undefined;
}
