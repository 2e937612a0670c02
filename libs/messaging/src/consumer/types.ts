import type { Logger } from 'pino';

/** What a handler sees besides the event. No channel, no delivery tag: the runtime owns those. */
export interface MessageContext {
  /** Bound to eventId, correlationId, attempt, messageType and idempotencyKey (plus queue and handler). */
  logger: Logger;
  /** Aborted when the handler's deadline passes (the visibility-timeout analogue) or on forced shutdown. */
  signal: AbortSignal;
  /** 1 on the first try, 2 after the first delayed retry, … */
  attempt: number;
  /** Deliveries of this copy by the broker (> 1 after a crash or a lost connection). */
  deliveryCount: number;
  queue: string;
  handler: string;
  eventId: string;
  correlationId: string;
}

/** How a handler says it went (metrics label). Failures are thrown, and classified by type. */
export type Outcome = 'processed' | 'duplicate' | 'skipped';

export type Handler<E, C extends MessageContext = MessageContext> = (event: E, ctx: C) => Promise<Outcome | void>;

/**
 * Wraps a handler with one cross-cutting concern. The runtime's own (failure routing, validation,
 * log context, metrics, deadline) run outside an app's middleware, so an app's middleware sees a
 * validated event, the bound logger and the deadline's signal, and whatever it throws is classified
 * and routed like a handler's error. In batch mode it wraps each message's passage: `next` resolves
 * once the batch holding the message committed, with that message's outcome (the deadline applies
 * to the batch, so there `ctx.signal` is the consumer's shutdown signal).
 *
 * Pass the context on (or a copy made with `Object.create` or a spread): the runtime finds the
 * message behind it.
 */
export type Middleware<E, C extends MessageContext = MessageContext> = (next: Handler<E, C>) => Handler<E, C>;

export interface BatchItem<E> {
  event: E;
  ctx: MessageContext;
}

export interface BatchContext {
  logger: Logger;
  signal: AbortSignal;
  queue: string;
  handler: string;
  /**
   * Frees this batch's slot (or lane) early: the next batch may start while this one finishes, for
   * a handler whose exclusive part is over (its transaction committed) and that only waits now
   * (for publisher confirms). Its messages are still settled only when it returns, and the
   * consumer's prefetch still bounds the messages in flight. Absent when a test calls a handler directly.
   */
  release?: () => void;
}

/**
 * A batch handler commits the effects of many messages together. It returns one entry per item:
 * an Outcome, or the Error that item failed with (only that item is retried or dead-lettered).
 * Returning nothing means every item succeeded; throwing fails every item with that error.
 */
export type BatchHandler<E> = (
  items: BatchItem<E>[],
  ctx: BatchContext,
) => Promise<ReadonlyArray<Outcome | Error | void> | void>;

interface ConsumerCommon<E> {
  queue: string;
  /** Names the handler in logs, metrics and dead-letter headers. */
  name: string;
  /** Unacked messages the broker may push to this consumer. Default 32. */
  prefetch?: number;
  /** Deadline per handler call (or per batch). Default 30 s. */
  timeoutMs?: number;
  /** Parses and validates the body; must throw a permanent error for bad input. Required: the runtime knows no contract. */
  validate: (body: Buffer) => E;
  /**
   * The key a handler deduplicates on, bound to the message's logger as `idempotencyKey`.
   * Default: the message id (the event id, which inboxes are keyed by).
   */
  idempotencyKey?: (event: E) => string | undefined;
  /** The app's own middleware, outermost first; they run inside the runtime's (see Middleware). */
  middleware?: ReadonlyArray<Middleware<E>>;
}

export interface SingleConsumerOptions<E> extends ConsumerCommon<E> {
  handle: Handler<E>;
  /** Handler calls at once. Default = prefetch. */
  concurrency?: number;
}

export interface BatchConsumerOptions<E> extends ConsumerCommon<E> {
  batch: {
    /** Flush when this many messages are collected… (≤ prefetch) */
    size: number;
    /** …or this long after the first one arrived. */
    maxWaitMs: number;
    handle: BatchHandler<E>;
    /** Batches in flight at once. Default 1 (more needs prefetch ≥ size × concurrency). */
    concurrency?: number;
    /**
     * Partitions the batches by this key (e.g. the user an event is for): one lane per unit of
     * `concurrency`, a key always in the same lane, one batch per lane at a time. Messages of one
     * key then never run in two concurrent batches of this consumer, so batches that lock rows per
     * key do not wait on each other. Absent: any message may join any batch.
     */
    partitionKey?: (event: E) => string;
  };
}

export type ConsumerOptions<E> = SingleConsumerOptions<E> | BatchConsumerOptions<E>;
