import { setTimeout as sleep } from 'node:timers/promises';
import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { backoffDelay } from './backoff';
import { connect } from './connection';
import { createConsumer, type Consumer } from './consumer/consumer';
import type { ConsumerOptions } from './consumer/types';
import type { ErrorClassifier } from './errors';
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
  /**
   * How the service's own error types fail: asked in order, after the error's own
   * `permanent`/`transient` flag and before the default (transient). E.g. `[classifyPgError]`
   * from libs/db in a service that handles messages against Postgres. `[]` when there are none.
   */
  classifiers: readonly ErrorClassifier[];
  /** The exchange `publish()` uses when a call names none. Default: the topology's exchange, when it declares exactly one. */
  defaultExchange?: string;
  /** Defaults to http://<amqp host>:15672 with the AMQP credentials. */
  managementUrl?: string;
  publishTimeoutMs?: number;
}

export interface Messaging {
  readonly publisher: Publisher;
  readonly metrics: RuntimeMetrics;
  readonly plan: TopologyPlan;
  /** Registers a consumer; it starts with `start()` (or at once if already started). */
  consume<E>(options: ConsumerOptions<E>): Consumer;
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
  const classifiers = [...options.classifiers];
  const defaultExchange = options.defaultExchange ?? (topology.exchanges.length === 1 ? topology.exchanges[0].name : undefined);
  const connection = connect({ url: options.url, name: options.service, logger });
  const publisher = createPublisher({ connection, topology, plan, logger, metrics, defaultExchange, defaultTimeoutMs: options.publishTimeoutMs });
  const consumers: Consumer[] = [];
  const stopping = new AbortController();
  let started = false;

  async function applyPolicies(): Promise<void> {
    const target = managementTargetFor(options.url, options.managementUrl);
    for (let attempt = 0; ; attempt++) {
      try {
        await ensurePolicies(target, plan.policies, logger);
        return;
      } catch (err) {
        // Without its policy a work queue has no DLX and no delivery limit: do not consume yet.
        logger.error({ err: (err as Error).message, attempt: attempt + 1 }, 'could not apply queue policies through the management API; retrying');
        await sleep(backoffDelay(attempt, { baseMs: 500, maxMs: 10_000 }), undefined, { signal: stopping.signal });
      }
    }
  }

  return {
    publisher,
    metrics,
    plan,
    connection,
    consume<E>(opts: ConsumerOptions<E>): Consumer {
      assertQueueDeclared(topology, opts.queue);
      const spec = topology.queues.find((q) => q.name === opts.queue)!;
      const consumer = createConsumer<E>({ connection, plan, spec, logger, metrics, classifiers }, opts);
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
      stopping.abort();
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
