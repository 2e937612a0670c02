import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Runtime metrics, in base units, with bounded labels only: queue, message_type, handler,
 * outcome, error_class (a class name, never an error message or an id).
 */
export interface RuntimeMetrics {
  consumed: Counter<'queue' | 'message_type' | 'handler'>;
  succeeded: Counter<'queue' | 'message_type' | 'handler' | 'outcome'>;
  failed: Counter<'queue' | 'message_type' | 'handler' | 'error_class'>;
  retried: Counter<'queue' | 'message_type' | 'handler' | 'tier'>;
  deadLettered: Counter<'queue' | 'message_type' | 'handler' | 'error_class'>;
  handlerDuration: Histogram<'queue' | 'message_type' | 'handler' | 'outcome'>;
  batchSize: Histogram<'queue' | 'handler'>;
  lag: Histogram<'queue' | 'message_type'>;
  inFlight: Gauge<'queue'>;
  published: Counter<'exchange' | 'message_type' | 'outcome'>;
  publishDuration: Histogram<'exchange' | 'message_type'>;
  /** Sampled from the management API by the policy guard: work queues and their DLQs. */
  queueMessages: Gauge<'queue'>;
  queueMaxLength: Gauge<'queue'>;
  /** 1 when the broker reports the queue's dead-letter exchange and delivery limit in force; consumers wait for it. */
  queuePolicyInForce: Gauge<'queue'>;
  /** The policy guard's checks by outcome (ok, failed): a guard that stopped checking shows as a flat line. */
  policyChecks: Counter<'outcome'>;
  /** Retry or DLQ copies the broker returned as unroutable (their originals stay unacked and are retried). */
  unroutableCopies: Counter<'queue' | 'destination'>;
}

const cache = new WeakMap<Registry, RuntimeMetrics>();

/** Idempotent per registry: several runtimes in one process (tests) share the same series. */
export function runtimeMetrics(registry: Registry): RuntimeMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const m: RuntimeMetrics = {
    consumed: new Counter({
      name: 'messaging_consumed_total',
      help: 'Messages delivered to a handler',
      labelNames: ['queue', 'message_type', 'handler'],
      registers,
    }),
    succeeded: new Counter({
      name: 'messaging_succeeded_total',
      help: 'Messages handled and acked',
      labelNames: ['queue', 'message_type', 'handler', 'outcome'],
      registers,
    }),
    failed: new Counter({
      name: 'messaging_failed_total',
      help: 'Handler failures (each attempt)',
      labelNames: ['queue', 'message_type', 'handler', 'error_class'],
      registers,
    }),
    retried: new Counter({
      name: 'messaging_retried_total',
      help: 'Messages sent to a delayed-retry tier',
      labelNames: ['queue', 'message_type', 'handler', 'tier'],
      registers,
    }),
    deadLettered: new Counter({
      name: 'messaging_dead_lettered_total',
      help: 'Messages sent to the DLQ by the runtime',
      labelNames: ['queue', 'message_type', 'handler', 'error_class'],
      registers,
    }),
    // Handlers are a database transaction or an SMTP call: 1 ms to tens of seconds.
    handlerDuration: new Histogram({
      name: 'messaging_handler_duration_seconds',
      help: 'Handler (or batch handler) duration',
      labelNames: ['queue', 'message_type', 'handler', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    batchSize: new Histogram({
      name: 'messaging_batch_size',
      help: 'Messages per batch handed to a batch handler',
      labelNames: ['queue', 'handler'],
      buckets: [1, 5, 10, 25, 50, 100, 200, 500],
      registers,
    }),
    // From the AMQP timestamp (1 s resolution) or the envelope's occurredAt to the start of handling.
    lag: new Histogram({
      name: 'messaging_publish_to_consume_lag_seconds',
      help: 'Time from event occurrence/publish to the start of handling',
      labelNames: ['queue', 'message_type'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers,
    }),
    inFlight: new Gauge({
      name: 'messaging_in_flight_messages',
      help: 'Messages received and not yet acked',
      labelNames: ['queue'],
      registers,
    }),
    published: new Counter({
      name: 'messaging_published_total',
      help: 'Publishes by outcome (confirmed, unroutable, rejected, timeout)',
      labelNames: ['exchange', 'message_type', 'outcome'],
      registers,
    }),
    publishDuration: new Histogram({
      name: 'messaging_publish_confirm_duration_seconds',
      help: 'Time from publish to broker confirm',
      labelNames: ['exchange', 'message_type'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    }),
    queueMessages: new Gauge({
      name: 'messaging_queue_messages',
      help: 'Messages in a work queue or its DLQ (management API sample, ~5 s old)',
      labelNames: ['queue'],
      registers,
    }),
    queueMaxLength: new Gauge({
      name: 'messaging_queue_max_length',
      help: 'Effective max-length of a work queue; past it the oldest message is dead-lettered (maxlen)',
      labelNames: ['queue'],
      registers,
    }),
    queuePolicyInForce: new Gauge({
      name: 'messaging_queue_policy_in_force',
      help: '1 when the queue has its dead-letter exchange and delivery limit in force',
      labelNames: ['queue'],
      registers,
    }),
    policyChecks: new Counter({
      name: 'messaging_policy_checks_total',
      help: 'Queue policy checks against the management API, by outcome (ok, failed)',
      labelNames: ['outcome'],
      registers,
    }),
    unroutableCopies: new Counter({
      name: 'messaging_unroutable_copies_total',
      help: 'Retry/DLQ copies returned unroutable; the original was not acked',
      labelNames: ['queue', 'destination'],
      registers,
    }),
  };
  cache.set(registry, m);
  return m;
}
