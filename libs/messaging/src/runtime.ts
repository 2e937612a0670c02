import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { connect } from './connection';
import { createConsumer, type Consumer } from './consumer/consumer';
import type { ConsumerOptions } from './consumer/types';
import type { ErrorClassifier } from './errors';
import { brokerUserOf, DEFAULT_MAX_MESSAGE_BYTES, ProducerPolicy, type ProducerCheckOptions } from './identity';
import { runtimeMetrics, type RuntimeMetrics } from './metrics';
import { PolicyGuard } from './policy-guard';
import { createPublisher, type Publisher } from './publisher';
import {
  assertQueueDeclared,
  managementTargetFor,
  plan as planTopology,
  validateTopology,
  type Topology,
  type TopologyPlan,
} from './topology';

export interface MessagingOptions {
  /** AMQP_URL; its vhost is the one used. */
  url: string;
  /** Names the connection in the management UI. */
  service: string;
  topology: Topology;
  logger: Logger;
  registry: Registry;
  /**
   * How the service's own error types fail: asked in order, after the error's own
   * `permanent`/`transient` flag and before the default (transient). E.g. `[classifyPgError]`
   * from libs/db in a service that handles messages against Postgres. `[]` when there are none.
   */
  classifiers: readonly ErrorClassifier[];
  /**
   * The exchange `publish()` uses when a call names none. Default: the topology's entry exchange,
   * when it declares exactly one: an exchange fed by another (it has `bindings`) is a route inside
   * the broker, not a place producers publish to, so it does not count.
   */
  defaultExchange?: string;
  /** Defaults to http://<amqp host>:15672 with the AMQP credentials. */
  managementUrl?: string;
  publishTimeoutMs?: number;
  /** How often queue policies are re-checked (and depths sampled) once in force. Default 30 s. */
  policyCheckIntervalMs?: number;
  /**
   * Who provisions the broker topology (docs/MESSAGING.md "Provisioning"):
   * - `declare-all` (default; development and tests): every channel declares the whole topology
   *   and the runtime applies the queue policies (falling back to checking them when the
   *   management API refuses).
   * - `own-queues` (least-privilege broker users; docs/DEPLOY.md): the topology admin provisions
   *   exchanges, queues, bindings and policies; the runtime checks the exchanges exist, declares
   *   and binds only the queues it consumes (with their retry tiers and DLQ), and never writes a
   *   policy: consumers wait until the admin's policies are in force.
   */
  provisioning?: Provisioning;
  /**
   * The broker user this process connects as: the `user-id` it sets on every publish (RabbitMQ
   * refuses a mismatch) and the user its consumers trust for their own retry copies. Default: the
   * AMQP URL's user (`guest` without one); set it when the connection authenticates otherwise
   * (EXTERNAL, a client certificate).
   */
  brokerUser?: string;
  /**
   * Who may publish what, when the topology declares `producers` (docs/MESSAGING.md "Broker
   * identity"): the deployment's service → broker user map, and what to do without `user-id`.
   */
  producerCheck?: ProducerCheckOptions;
  /** Consumers dead-letter bodies larger than this unparsed, and the publisher refuses them. Default 1 MiB (the broker's max_message_size). */
  maxMessageBytes?: number;
}

export type Provisioning = 'declare-all' | 'own-queues';
export const PROVISIONING_MODES: readonly Provisioning[] = ['declare-all', 'own-queues'];

export interface Messaging {
  readonly publisher: Publisher;
  readonly metrics: RuntimeMetrics;
  readonly plan: TopologyPlan;
  /** Registers a consumer; it starts with `start()` (or at once if already started). */
  consume<E>(options: ConsumerOptions<E>): Consumer;
  /**
   * Applies policies, connects and declares the topology. Each consumer subscribes once the broker
   * reports its queue's dead-letter exchange and delivery limit in force (a fresh queue: ~5 s).
   */
  start(): Promise<void>;
  /** Graceful: consumers drain within the deadline, then the publisher and connection close. */
  stop(deadlineMs?: number): Promise<void>;
  /** For /readyz: broker connected and every consumer consuming (or paused on purpose). */
  readiness(): Record<string, boolean>;
  /**
   * The broker's reason while it blocks this connection's publishes (AMQP connection.blocked: a
   * memory or disk alarm), else undefined. For /readyz's details, not its verdict: an alarm is
   * broker-wide, every replica alike, so taking pods out of rotation fixes nothing.
   */
  blocked(): string | undefined;
  readonly connection: AmqpConnectionManager;
}

export function createMessaging(options: MessagingOptions): Messaging {
  // Refuse a bad topology before touching the network.
  const topology = validateTopology(options.topology);
  const plan = planTopology(topology);
  const logger = options.logger.child({ component: 'messaging' });
  const metrics = runtimeMetrics(options.registry);
  const classifiers = [...options.classifiers];
  const entries = topology.exchanges.filter((x) => (x.bindings ?? []).length === 0);
  const defaultExchange = options.defaultExchange ?? (entries.length === 1 ? entries[0].name : undefined);
  const connection = connect({ url: options.url, name: options.service, logger });
  let blockedReason: string | undefined;
  connection.on('blocked', ({ reason }) => (blockedReason = reason || 'blocked'));
  connection.on('unblocked', () => (blockedReason = undefined));
  // A new connection starts unblocked; the broker sends connection.blocked again if the alarm holds.
  connection.on('disconnect', () => (blockedReason = undefined));
  const provisioning = options.provisioning ?? 'declare-all';
  const userId = options.brokerUser ?? brokerUserOf(options.url);
  const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const producers = topology.producers
    ? new ProducerPolicy(topology.producers, topology.replayers ?? [], userId, options.service, options.producerCheck)
    : undefined;
  const publisher = createPublisher({
    connection,
    topology,
    plan,
    logger,
    metrics,
    defaultExchange,
    defaultTimeoutMs: options.publishTimeoutMs,
    provisioning,
    userId,
    maxMessageBytes,
  });
  const consumers: Consumer[] = [];
  const stopping = new AbortController();
  let started = false;
  // Without its policy a work queue has no DLX and no delivery limit: its consumers wait for the guard.
  const policies = new PolicyGuard({
    target: managementTargetFor(options.url, options.managementUrl),
    plan,
    logger,
    metrics,
    intervalMs: options.policyCheckIntervalMs ?? 30_000,
    signal: stopping.signal,
    verifyOnly: provisioning === 'own-queues',
  });

  return {
    publisher,
    metrics,
    plan,
    connection,
    consume<E>(opts: ConsumerOptions<E>): Consumer {
      assertQueueDeclared(topology, opts.queue);
      const spec = topology.queues.find((q) => q.name === opts.queue)!;
      const consumer = createConsumer<E>(
        {
          connection,
          plan,
          spec,
          logger,
          metrics,
          classifiers,
          policies,
          provisioning,
          maxMessageBytes,
          producers,
          userId,
        },
        opts,
      );
      consumers.push(consumer);
      if (started) void consumer.start();
      return consumer;
    },
    async start() {
      await policies.apply();
      started = true;
      // Connected and declared; then, the queues existing, their policy state is known and every
      // consumer whose queue has it in force is subscribed before start() resolves.
      await Promise.all([publisher.ready(), ...consumers.map((c) => c.start())]);
      await policies.checkNow();
      await Promise.all(consumers.map((c) => c.start()));
      policies.watchInBackground();
    },
    async stop(deadlineMs = 10_000) {
      stopping.abort();
      await Promise.all(consumers.map((c) => c.stop(deadlineMs)));
      await publisher.close().catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
    blocked() {
      return blockedReason;
    },
    readiness() {
      return {
        amqp: connection.isConnected(),
        consumers: consumers.every((c) => c.isHealthy()),
      };
    },
  };
}
