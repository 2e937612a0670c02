import { setMaxListeners } from 'node:events';
import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import { errorClass, errorMessage } from '../errors';
import type { RuntimeMetrics } from '../metrics';
import { declareTopology, type QueueSpec, type TopologyPlan } from '../topology';
import { Acker } from './acker';
import { Batcher } from './batcher';
import { contextFor, lagSeconds, type Delivery } from './delivery';
import { failureHeaders, publishCopy, routeFailure } from './failure';
import { Limiter } from './limiter';
import { checkMessageProperties } from './properties';
import { withTimeout } from './timeout';
import type { ConsumerOptions, MessageContext, Outcome } from './types';

export interface Consumer {
  readonly queue: string;
  /** Opens the channel and starts consuming; resolves once connected. */
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
  spec: QueueSpec;
  logger: Logger;
  metrics: RuntimeMetrics;
}

export function createConsumer<E>(deps: ConsumerDeps, options: ConsumerOptions<E>): Consumer {
  const { connection, plan, spec, metrics } = deps;
  const queue = spec.name;
  const handler = options.name;
  const log = deps.logger.child({ queue, handler });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const batch = 'batch' in options ? options.batch : undefined;
  const prefetch = options.prefetch ?? (batch ? batch.size * (batch.concurrency ?? 1) * 2 : 32);
  if (batch && batch.size > prefetch) {
    throw new Error(`consumer ${handler} on ${queue}: batch.size (${batch.size}) must not exceed prefetch (${prefetch})`);
  }
  const labels = (type: string | undefined) => ({ queue, handler, message_type: type ?? 'unknown' });
  // Labelled children of the per-message series, resolved once per message type and outcome:
  // looking labels up costs more than everything else the runtime does for a successful message.
  type CounterChild = ReturnType<RuntimeMetrics['consumed']['labels']>;
  type HistogramChild = ReturnType<RuntimeMetrics['lag']['labels']>;
  const series = new Map<string, { consumed: CounterChild; lag: HistogramChild; done: Map<string, [CounterChild, HistogramChild]> }>();
  const seriesFor = (type = 'unknown') => {
    let s = series.get(type);
    if (!s) {
      s = { consumed: metrics.consumed.labels(labels(type)), lag: metrics.lag.labels({ queue, message_type: type }), done: new Map() };
      series.set(type, s);
    }
    return s;
  };
  const doneSeries = (type: string | undefined, outcome: string) => {
    const s = seriesFor(type);
    let pair = s.done.get(outcome);
    if (!pair) {
      pair = [metrics.succeeded.labels({ ...labels(type), outcome }), metrics.handlerDuration.labels({ ...labels(type), outcome })];
      s.done.set(outcome, pair);
    }
    return pair;
  };
  const inFlightGauge = metrics.inFlight.labels({ queue });

  let channel: ConfirmChannel | undefined;
  const ackers = new WeakMap<ConfirmChannel, Acker>();
  let consumerTag: string | undefined;
  let paused = false;
  let stopping = false;
  // Aborted only when the shutdown deadline passes: tells every running handler to give up.
  const forced = new AbortController();
  // Every running handler listens to it (through withTimeout): no listener limit applies.
  setMaxListeners(0, forced.signal);
  const deliveries = new Set<Delivery<E>>();
  let onIdle: (() => void) | undefined;

  // ---- settling a delivery: exactly once, on the channel it came from ---------------------------
  function settle(d: Delivery<E>, action: 'ack' | 'requeue'): void {
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

  function succeed(d: Delivery<E>, outcome: Outcome | void, startedAt: number): void {
    const o = outcome ?? 'processed';
    const [count, duration] = doneSeries(d.msg.properties.type, o);
    const seconds = (performance.now() - startedAt) / 1000;
    count.inc();
    duration.observe(seconds);
    // One line per message only at debug: at thousands of messages per second, info would drown the rest.
    if (log.isLevelEnabled('debug')) d.ctx.logger.debug({ outcome: o, durationMs: Math.round(seconds * 1000) }, 'handled');
    settle(d, 'ack');
  }

  /** Retry tier or DLQ, confirmed by the broker, and only then the ack of the original. */
  async function fail(d: Delivery<E>, err: unknown): Promise<void> {
    if (d.settled) return;
    const type = d.msg.properties.type;
    metrics.failed.inc({ ...labels(type), error_class: errorClass(err) });
    const route = routeFailure(queue, spec.retryDelaysMs, d.ctx.attempt, err);
    const headers = failureHeaders(d.msg, route, { queue, handler, attempt: d.ctx.attempt, err });
    try {
      await publishCopy(d.channel, d.msg, route.queue, headers);
    } catch (publishErr) {
      d.ctx.logger.error({ err: errorMessage(publishErr), target: route.queue }, 'could not move failed message; returning it to the queue');
      settle(d, 'requeue');
      return;
    }
    if (route.destination === 'retry') {
      metrics.retried.inc({ ...labels(type), tier: String(route.tierMs) });
      d.ctx.logger.warn({ err: errorMessage(err), errorClass: errorClass(err), retryIn: route.tierMs }, 'handler failed; scheduled retry');
    } else {
      metrics.deadLettered.inc({ ...labels(type), error_class: errorClass(err) });
      d.ctx.logger.error({ err: errorMessage(err), errorClass: errorClass(err), kind: route.kind }, 'message dead-lettered');
    }
    settle(d, 'ack');
  }

  // ---- running handlers ---------------------------------------------------------------------------
  const handle = 'handle' in options ? options.handle : undefined;
  async function runSingle(d: Delivery<E>): Promise<void> {
    if (d.settled || !handle) return;
    const startedAt = performance.now();
    try {
      const outcome = await withTimeout(timeoutMs, forced.signal, (signal) => handle(d.event as E, withSignal(d.ctx, signal)));
      succeed(d, outcome, startedAt);
    } catch (err) {
      doneSeries(d.msg.properties.type, 'failed')[1].observe((performance.now() - startedAt) / 1000);
      await fail(d, err);
    }
  }

  async function runBatch(items: Delivery<E>[]): Promise<void> {
    const live = items.filter((d) => !d.settled);
    if (!batch || live.length === 0) return;
    metrics.batchSize.observe({ queue, handler }, live.length);
    const startedAt = performance.now();
    let results: ReadonlyArray<Outcome | Error | void> | void;
    try {
      results = await withTimeout(timeoutMs, forced.signal, (signal) =>
        batch.handle(live.map((d) => ({ event: d.event as E, ctx: withSignal(d.ctx, signal) })), { logger: log, signal, queue, handler }),
      );
    } catch (err) {
      await Promise.all(live.map((d) => fail(d, err)));
      return;
    }
    // Each message is acked only here, after the batch handler's transaction committed.
    await Promise.all(
      live.map((d, i) => {
        const r = results ? results[i] : undefined;
        return r instanceof Error ? fail(d, r) : Promise.resolve(succeed(d, r, startedAt));
      }),
    );
  }

  const limiter = new Limiter<Delivery<E>>(batch ? Number.MAX_SAFE_INTEGER : ('concurrency' in options && options.concurrency) || prefetch);
  const batcher = batch ? new Batcher<Delivery<E>>(batch.size, batch.maxWaitMs, batch.concurrency ?? 1, runBatch) : undefined;

  // ---- receiving ----------------------------------------------------------------------------------
  function onMessage(ch: ConfirmChannel, acker: Acker, msg: ConsumeMessage | null): void {
    if (msg === null) {
      // The broker cancelled us (queue deleted or node shutting down); the next reconnect resubscribes.
      log.warn('consumer cancelled by the broker');
      consumerTag = undefined;
      return;
    }
    inFlightGauge.inc();
    acker.received(msg);
    const d: Delivery<E> = { channel: ch, acker, msg, receivedAt: Date.now(), ctx: contextFor(msg, log, queue, handler, forced.signal), settled: false };
    deliveries.add(d);
    if (stopping) return settle(d, 'requeue');
    const s = seriesFor(msg.properties.type);
    s.consumed.inc();
    try {
      checkMessageProperties(msg.properties);
      d.event = options.validate(msg.content);
    } catch (err) {
      void fail(d, err);
      return;
    }
    const lag = lagSeconds(msg, d.event, d.receivedAt);
    if (lag !== undefined) s.lag.observe(lag);
    if (batcher) batcher.add(d);
    else limiter.submit(d, () => runSingle(d));
  }

  async function subscribe(ch: ConfirmChannel): Promise<void> {
    const acker = ackers.get(ch) ?? new Acker(ch);
    ackers.set(ch, acker);
    const ok = await ch.consume(queue, (msg) => onMessage(ch, acker, msg), { noAck: false });
    consumerTag = ok.consumerTag;
    log.info({ prefetch, consumerTag }, 'consuming');
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
      await declareTopology(ch, plan);
      channel = ch;
      consumerTag = undefined;
      ch.once('close', () => onChannelClosed(ch));
      await ch.prefetch(prefetch);
      if (!paused && !stopping) await subscribe(ch);
    },
  });
  wrapper.on('error', (err) => log.error({ err: errorMessage(err) }, 'consumer channel setup failed'));

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

  return {
    queue,
    async start() {
      await wrapper.waitForConnect();
    },
    async pause() {
      paused = true;
      await unsubscribe();
      log.info('paused');
    },
    async resume() {
      paused = false;
      if (channel && !consumerTag && !stopping) await subscribe(channel);
      log.info('resumed');
    },
    async stop(deadlineMs: number) {
      stopping = true;
      await unsubscribe();
      // Unstarted prefetched messages go back to the broker now, for another replica to take.
      for (const d of limiter.drainWaiting()) settle(d, 'requeue');
      for (const d of batcher?.drainBuffered() ?? []) settle(d, 'requeue');
      if (deliveries.size > 0) {
        const idle = new Promise<void>((resolve) => (onIdle = resolve));
        const timedOut = await Promise.race([idle.then(() => false), sleep(deadlineMs).then(() => true)]);
        if (timedOut) {
          log.warn({ unfinished: deliveries.size }, 'shutdown deadline passed; aborting handlers, the broker will redeliver');
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

/** The context with the handler's own signal; keeps the lazy logger lazy (a spread would evaluate it). */
function withSignal(ctx: MessageContext, signal: AbortSignal): MessageContext {
  return Object.create(ctx, { signal: { value: signal, enumerable: true } }) as MessageContext;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
