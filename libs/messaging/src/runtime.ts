import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { validateOrThrow, type AnyEvent } from '@community/contracts';
import { connect } from './connection';
import { createConsumer, type Consumer } from './consumer/consumer';
import type { ConsumerOptions } from './consumer/types';
import { runtimeMetrics, type RuntimeMetrics } from './metrics';
import { createPublisher, type Publisher } from './publisher';
import { assertQueueDeclared, ensurePolicies, managementTargetFor, plan as planTopology, validateTopology, type Topology, type TopologyPlan } from './topology';

export interface MessagingOptions {
  /** AMQP_URL; its vhost is the one used. */
  url: string;
  /** Names the connection in the management UI. */
  service: string;
  topology: Topology;
  logger: Logger;
  registry: Registry;
  /** Defaults to http://<amqp host>:15672 with the AMQP credentials. */
  managementUrl?: string;
  publishTimeoutMs?: number;
}

/** Consumer options where `validate` defaults to the v1 contract validator. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type ConsumeOptions<E = AnyEvent> = DistributiveOmit<ConsumerOptions<E>, 'validate'> & { validate?: (body: Buffer) => E };

export interface Messaging {
  readonly publisher: Publisher;
  readonly metrics: RuntimeMetrics;
  readonly plan: TopologyPlan;
  /** Registers a consumer; it starts with `start()` (or at once if already started). */
  consume<E = AnyEvent>(options: ConsumeOptions<E>): Consumer;
  /** Applies policies, connects, declares the topology and starts every consumer. */
  start(): Promise<void>;
  /** Graceful: consumers drain within the deadline, then the publisher and connection close. */
  stop(deadlineMs?: number): Promise<void>;
  /** For /readyz: broker connected and every consumer consuming (or paused on purpose). */
  readiness(): Record<string, boolean>;
  readonly connection: AmqpConnectionManager;
}

export function createMessaging(options: MessagingOptions): Messaging {
  // Refuse a bad topology before touching the network.
  const topology = validateTopology(options.topology);
  const plan = planTopology(topology);
  const logger = options.logger.child({ component: 'messaging' });
  const metrics = runtimeMetrics(options.registry);
  const connection = connect({ url: options.url, name: options.service, logger });
  const publisher = createPublisher({ connection, topology, plan, logger, metrics, defaultTimeoutMs: options.publishTimeoutMs });
  const consumers: Consumer[] = [];
  let started = false;

  async function applyPolicies(): Promise<void> {
    const target = managementTargetFor(options.url, options.managementUrl);
    for (let attempt = 1; ; attempt++) {
      try {
        await ensurePolicies(target, plan.policies, logger);
        return;
      } catch (err) {
        // Without its policy a work queue has no DLX and no delivery limit: do not consume yet.
        logger.error({ err: (err as Error).message, attempt }, 'could not apply queue policies through the management API; retrying');
        await new Promise((r) => setTimeout(r, Math.min(10_000, 500 * attempt)));
      }
    }
  }

  return {
    publisher,
    metrics,
    plan,
    connection,
    consume<E = AnyEvent>(opts: ConsumeOptions<E>): Consumer {
      assertQueueDeclared(topology, opts.queue);
      const spec = topology.queues.find((q) => q.name === opts.queue)!;
      const validate = opts.validate ?? ((body: Buffer) => validateOrThrow(body) as unknown as E);
      const consumer = createConsumer<E>({ connection, plan, spec, logger, metrics }, { ...opts, validate } as ConsumerOptions<E>);
      consumers.push(consumer);
      if (started) void consumer.start();
      return consumer;
    },
    async start() {
      await applyPolicies();
      started = true;
      await Promise.all([publisher.ready(), ...consumers.map((c) => c.start())]);
    },
    async stop(deadlineMs = 10_000) {
      await Promise.all(consumers.map((c) => c.stop(deadlineMs)));
      await publisher.close().catch(() => undefined);
      await connection.close().catch(() => undefined);
    },
    readiness() {
      return {
        amqp: connection.isConnected(),
        consumers: consumers.every((c) => c.isHealthy()),
      };
    },
  };
}
