import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import { backoffDelay } from '../backoff';
import { errorMessage, type ErrorClassifier } from '../errors';
import type { ProducerPolicy } from '../identity';
import type { RuntimeMetrics } from '../metrics';
import type { PolicyGate } from '../policy-guard';
import { declareOwnQueues, declareTopology, type QueueSpec, type TopologyPlan } from '../topology';
import { Acker } from './acker';
import { batchRunner, joinBatch, type BatchEntry } from './batch';
import { Batcher, PartitionedBatcher, type BatchSink } from './batcher';
import { DELIVERY, newDelivery, type Delivery, type RuntimeContext } from './delivery';
import { Limiter } from './limiter';
import { ConsumerSeries } from './middleware/metrics';
import { buildPipeline } from './pipeline';
import type { ConsumerOptions, SingleConsumerOptions } from './types';

export interface Consumer {
  readonly queue: string;
  /** Opens the channel; resolves once connected, and subscribed if the queue's policy is in force. */
  start(): Promise<void>;
  /** Stops taking new messages (in-flight ones finish). Used by circuit breakers. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Graceful stop: cancel, return unstarted messages, finish in-flight work within the deadline, close. */
  stop(deadlineMs: number): Promise<void>;
  /** Consuming now, or paused on purpose. */
  isHealthy(): boolean;
  inFlight(): number;
}

export interface ConsumerDeps {
  connection: AmqpConnectionManager;
  plan: TopologyPlan;
  /** `own-queues`: declare and bind only this consumer's queue group (runtime.ts). */
  provisioning?: 'declare-all' | 'own-queues';
  spec: QueueSpec;
  logger: Logger;
  metrics: RuntimeMetrics;
  classifiers: readonly ErrorClassifier[];
  /** Says whether the queue's dead-letter exchange and delivery limit are in force: no subscription before. */
  policies: PolicyGate;
  /** Bodies larger than this are dead-lettered unparsed (default DEFAULT_MAX_MESSAGE_BYTES). */
  maxMessageBytes?: number;
  /** Who may publish what (the topology's `producers`); undefined: no check. */
  producers?: ProducerPolicy;
  /** This connection's broker user: the `user-id` of the retry/DLQ copies. */
  userId?: string;
}

/**
 * The channel lifecycle of one queue: subscribe, hand each message to its pipeline (pipeline.ts),
 * settle it exactly once on the channel it came from (acks coalesced by the Acker), drain on stop,
 * resubscribe after a reconnect. Everything that happens to a message in between is middleware.
 * It subscribes only while its queue's policy is in force (PolicyGuard), on every path: first
 * start, consume() after start, reconnect, resume, and a policy that comes back.
 */
export function createConsumer<E>(deps: ConsumerDeps, options: ConsumerOptions<E>): Consumer {
  const { connection, plan, spec, metrics } = deps;
  const queue = spec.name;
  const handler = options.name;
  const log = deps.logger.child({ queue, handler });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const batch = 'batch' in options ? options.batch : undefined;
  const prefetch = options.prefetch ?? (batch ? batch.size * (batch.concurrency ?? 1) * 2 : 32);
  if (batch && batch.size > prefetch) {
    throw new Error(
      `consumer ${handler} on ${queue}: batch.size (${batch.size}) must not exceed prefetch (${prefetch})`,
    );
  }
  const series = new ConsumerSeries(metrics, queue, handler);
  const inFlightGauge = metrics.inFlight.labels({ queue });

  let channel: ConfirmChannel | undefined;
  const ackers = new WeakMap<ConfirmChannel, Acker>();
  let consumerTag: string | undefined;
  let paused = false;
  let stopping = false;
  // Aborted only when the shutdown deadline passes: tells every running handler to give up.
  const forced = new AbortController();
  // Every running handler listens to it (through its deadline): no listener limit applies.
  setMaxListeners(0, forced.signal);
  const deliveries = new Set<Delivery>();
  let onIdle: (() => void) | undefined;

  const runBatch = batch
    ? batchRunner({
        handle: batch.handle,
        timeoutMs,
        shutdown: forced.signal,
        logger: log,
        queue,
        handler,
        metrics,
        series,
      })
    : undefined;
  const partitionKey = batch?.partitionKey;
  const batcher: BatchSink<BatchEntry<E>> | undefined =
    batch && runBatch
      ? partitionKey
        ? new PartitionedBatcher<BatchEntry<E>>(
            batch.size,
            batch.maxWaitMs,
            batch.concurrency ?? 1,
            (entry) => partitionKey(entry.event),
            runBatch,
          )
        : new Batcher<BatchEntry<E>>(batch.size, batch.maxWaitMs, batch.concurrency ?? 1, runBatch)
      : undefined;
  const pipeline = buildPipeline<E>({
    queue,
    handler,
    logger: log,
    retryDelaysMs: spec.retryDelaysMs,
    classifiers: deps.classifiers,
    metrics,
    series,
    validate: options.validate,
    idempotencyKey: options.idempotencyKey,
    middleware: options.middleware ?? [],
    timeoutMs: batcher ? undefined : timeoutMs,
    terminal: batcher ? joinBatch(batcher) : (options as SingleConsumerOptions<E>).handle,
    maxMessageBytes: deps.maxMessageBytes,
    producers: deps.producers,
    userId: deps.userId,
  });
  const limiter = new Limiter<Delivery>(
    batch ? Number.MAX_SAFE_INTEGER : ('concurrency' in options && options.concurrency) || prefetch,
  );

  // ---- settling a delivery: exactly once, on the channel it came from ---------------------------
  function settle(d: Delivery, action: 'ack' | 'requeue'): void {
    if (d.settled) return;
    d.settled = true;
    deliveries.delete(d);
    inFlightGauge.dec();
    try {
      if (action === 'ack') d.acker.ack(d.msg);
      else d.acker.requeue(d.msg);
    } catch {
      // The channel closed under us (connection loss). The broker already requeued the message and
      // will redeliver it; handlers are idempotent, so the second run is absorbed.
      log.debug({ eventId: d.ctx.eventId }, 'channel closed before settle; broker will redeliver');
    }
    if (deliveries.size === 0) onIdle?.();
  }

  /** Resolved pipeline: handled, or its failure's copy confirmed → ack. Rejected: the copy failed → requeue. */
  function dispatch(d: Delivery): Promise<void> {
    return pipeline(d.msg.content, d.ctx).then(
      () => settle(d, 'ack'),
      () => settle(d, 'requeue'),
    );
  }

  // ---- receiving ----------------------------------------------------------------------------------
  function onMessage(ch: ConfirmChannel, acker: Acker, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // The broker cancelled us: the queue was deleted, or moved, or its node is shutting down. The
      // channel stays open, so no reconnect would resubscribe: do it here. Not ready meanwhile
      // (isHealthy reads consumerTag, cleared first).
      consumerTag = undefined;
      log.warn('consumer cancelled by the broker; not ready until resubscribed');
      void resubscribeAfterCancel(ch);
      return;
    }
    inFlightGauge.inc();
    acker.received(msg);
    const d = newDelivery({ channel: ch, acker, msg, logger: log, queue, handler, signal: forced.signal });
    deliveries.add(d);
    if (stopping) return settle(d, 'requeue');
    // A batch consumer's messages enter their pipeline at once and wait in the batcher, which has its own limit.
    if (batcher) void dispatch(d);
    else limiter.submit(d, () => dispatch(d));
  }

  const mayConsume = (): boolean => !paused && !stopping && deps.policies.inForce(queue);
  let subscribing: Promise<void> | undefined;

  /** Subscribes on the current channel if allowed and not yet subscribed; one attempt at a time. */
  function subscribe(): Promise<void> {
    subscribing ??= (async () => {
      const ch = channel;
      if (!ch || consumerTag || !mayConsume()) return;
      const acker = ackers.get(ch) ?? new Acker(ch);
      ackers.set(ch, acker);
      const ok = await ch.consume(queue, (msg) => onMessage(ch, acker, msg), { noAck: false });
      consumerTag = ok.consumerTag;
      log.info({ prefetch, consumerTag }, 'consuming');
      // Paused, stopped or the policy lost while basic.consume was on its way.
      if (!mayConsume()) await unsubscribe();
    })().finally(() => (subscribing = undefined));
    return subscribing;
  }

  /** What this consumer declares on a new channel, and again after a cancel (a deleted queue comes back). */
  async function declare(ch: ConfirmChannel): Promise<void> {
    if (deps.provisioning === 'own-queues') await declareOwnQueues(ch, plan, [spec.name]);
    else await declareTopology(ch, plan);
  }

  /**
   * After a broker-initiated cancel, on the same channel: declare the queue again (idempotent when it
   * still exists) and subscribe, with backoff until it works. Ends when the channel is gone (its
   * replacement's setup declares and subscribes), on stop, or once subscribed.
   */
  async function resubscribeAfterCancel(ch: ConfirmChannel): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await sleep(backoffDelay(attempt, { baseMs: 250, maxMs: 10_000 }), undefined, { ref: false });
      if (stopping || channel !== ch || consumerTag !== undefined) return;
      try {
        await declare(ch);
        await subscribe();
        if (consumerTag !== undefined)
          log.info({ attempt: attempt + 1 }, 'resubscribed after the broker cancelled the consumer');
        return;
      } catch (err) {
        // A failed declaration closes the channel: its replacement's setup takes over (loop ends above).
        log.warn(
          { err: errorMessage(err), attempt: attempt + 1 },
          'could not resubscribe after the broker cancelled the consumer; retrying',
        );
      }
    }
  }

  async function unsubscribe(): Promise<void> {
    const ch = channel;
    const tag = consumerTag;
    consumerTag = undefined;
    if (ch && tag) await ch.cancel(tag).catch(() => undefined);
  }

  const wrapper: ChannelWrapper = connection.createChannel({
    name: `consumer:${queue}`,
    confirm: true,
    setup: async (ch: ConfirmChannel) => {
      await declare(ch);
      channel = ch;
      consumerTag = undefined;
      ch.once('close', () => onChannelClosed(ch));
      await ch.prefetch(prefetch);
      // An attempt still under way belongs to the old channel; let it end, then subscribe on this one.
      await subscribing?.catch(() => undefined);
      await subscribe();
    },
  });
  wrapper.on('error', (err) => log.error({ err: errorMessage(err) }, 'consumer channel setup failed'));
  deps.policies.watch(queue, (inForce) => {
    const change = inForce ? subscribe() : unsubscribe();
    change.catch((err: unknown) => log.error({ err: errorMessage(err) }, 'could not follow the queue policy change'));
  });

  function onChannelClosed(ch: ConfirmChannel): void {
    if (channel !== ch) return;
    channel = undefined;
    consumerTag = undefined;
    // Messages that were waiting to start belong to the dead channel: the broker requeued them.
    for (const d of limiter.drainWaiting()) settle(d, 'requeue');
    // amqp-connection-manager only reopens channels after a *connection* loss. A channel that died
    // alone (a channel-level error) would stay dead, so force a reconnect in that case.
    setTimeout(() => {
      if (!stopping && channel === undefined && connection.isConnected()) {
        log.error('consumer channel closed while the connection stayed up; reconnecting');
        connection.reconnect();
      }
    }, 1000).unref();
  }

  /** Unstarted prefetched messages go back to the broker now, for another replica to take. */
  function returnUnstarted(): void {
    for (const d of limiter.drainWaiting()) settle(d, 'requeue');
    for (const entry of batcher?.drainBuffered() ?? []) {
      // Settled first, so the failure routing sees a message that is already back at the broker.
      const d = (entry.ctx as Partial<RuntimeContext>)[DELIVERY];
      if (d) settle(d, 'requeue');
      entry.reject(new Error('returned to the broker at shutdown'));
    }
  }

  return {
    queue,
    async start() {
      await wrapper.waitForConnect();
      await subscribe();
    },
    async pause() {
      paused = true;
      await unsubscribe();
      log.info('paused');
    },
    async resume() {
      paused = false;
      await subscribe();
      log.info('resumed');
    },
    async stop(deadlineMs: number) {
      stopping = true;
      await unsubscribe();
      returnUnstarted();
      if (deliveries.size > 0) {
        const idle = new Promise<void>((resolve) => (onIdle = resolve));
        const timer = new AbortController();
        const timedOut = await Promise.race([
          idle.then(() => false),
          sleep(deadlineMs, true, { signal: timer.signal, ref: false }).catch(() => false),
        ]);
        timer.abort();
        if (timedOut) {
          log.warn(
            { unfinished: deliveries.size },
            'shutdown deadline passed; aborting handlers, the broker will redeliver',
          );
          forced.abort(new Error('shutdown deadline'));
        }
      }
      if (channel) ackers.get(channel)?.flush();
      await wrapper.close().catch(() => undefined);
      log.info('stopped');
    },
    isHealthy: () => paused || consumerTag !== undefined,
    inFlight: () => deliveries.size,
  };
}
