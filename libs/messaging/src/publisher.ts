import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, Message, Options } from 'amqplib';
import type { Logger } from 'pino';
import { PublishRejectedError, PublishTimeoutError, UnroutableError } from './errors';
import { MessageTooLargeError } from './identity';
import type { RuntimeMetrics } from './metrics';
import {
  assertExchangeDeclared,
  declareOwnQueues,
  declareTopology,
  queueExchangeName,
  TopologyDriftError,
  TopologyError,
  type Topology,
  type TopologyPlan,
} from './topology';

/** The envelope fields the publisher maps to AMQP properties (see docs/CONTRACT.md "Broker contract"). */
export interface EnvelopeLike {
  id: string;
  type: string;
  version: number;
  occurredAt: string;
  correlationId: string;
}

export interface PublishOptions {
  /**
   * Defaults to the runtime's default exchange (see MessagingOptions.defaultExchange). `''` sends
   * to the queue named by `routingKey`: through that work queue's own exchange (`<queue>.direct`),
   * never the broker's default exchange, which no service may write to (docs/MESSAGING.md
   * "Broker identity").
   */
  exchange?: string;
  /** Defaults to the event type (the contract: routing key = type). */
  routingKey?: string;
  headers?: Record<string, unknown>;
  timeoutMs?: number;
}

export interface Publisher {
  /**
   * Resolves only when the broker confirmed the message. Rejects with UnroutableError when no queue
   * is bound for it, PublishRejectedError on a broker nack, PublishTimeoutError when no confirm
   * came in time (the message may still have been stored: callers that must not lose it, like
   * the outbox relay, retry, and consumers absorb the duplicate).
   */
  publish(event: EnvelopeLike, options?: PublishOptions): Promise<void>;
  /** Resolves once connected and the topology is declared; rejects with TopologyDriftError when the broker refuses it. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export interface PublisherDeps {
  connection: AmqpConnectionManager;
  topology: Topology;
  plan: TopologyPlan;
  logger: Logger;
  metrics: RuntimeMetrics;
  /** Used when a publish names no exchange; undefined means every publish must name one. */
  defaultExchange?: string;
  defaultTimeoutMs?: number;
  /** `own-queues`: a publisher declares nothing, it only checks the exchanges exist (runtime.ts). */
  provisioning?: 'declare-all' | 'own-queues';
  /** The connection's broker user, set as `user-id` on every message (RabbitMQ refuses a mismatch). */
  userId?: string;
  /** A larger body is refused before it is sent (the broker would close the channel over it). */
  maxMessageBytes?: number;
}

export function createPublisher(deps: PublisherDeps): Publisher {
  const { connection, topology, plan, logger, metrics } = deps;
  const defaultTimeoutMs = deps.defaultTimeoutMs ?? 10_000;
  // basic.return arrives before the basic.ack of the same message on the same channel, so by the
  // time the confirm resolves we know whether it was returned.
  const returned = new Map<string, string>();

  const channel: ChannelWrapper = connection.createChannel({
    name: 'publisher',
    confirm: true,
    setup: async (ch: ConfirmChannel) => {
      if (deps.provisioning === 'own-queues') await declareOwnQueues(ch, plan, []);
      else await declareTopology(ch, plan);
      ch.on('return', (msg: Message) => {
        const id = msg.properties.messageId as string | undefined;
        if (id) returned.set(id, (msg.fields as unknown as { replyText?: string }).replyText ?? 'NO_ROUTE');
      });
    },
  });
  // A drifted declaration fails the same way on every reconnect: fail ready() (and so start()) with
  // the entity's name instead of waiting forever for a channel that cannot be set up.
  let refuse!: (err: Error) => void;
  const refused = new Promise<never>((_, reject) => (refuse = reject));
  refused.catch(() => undefined);
  channel.on('error', (err) => {
    logger.error({ err }, 'publisher channel setup failed');
    if (err instanceof TopologyDriftError) refuse(err);
  });

  /** The work queue whose group a planned queue belongs to (a tier or DLQ: the queue it serves). */
  function groupOf(queue: string): string {
    const q = plan.queues.find((p) => p.name === queue)!;
    if (q.role === 'retry') return String(q.arguments['x-dead-letter-routing-key']);
    if (q.role === 'dlq') return queue.slice(0, -'.dlq'.length);
    return queue;
  }

  async function publish(event: EnvelopeLike, options: PublishOptions = {}): Promise<void> {
    const exchange = options.exchange ?? deps.defaultExchange;
    if (exchange === undefined) {
      throw new TopologyError([
        'publish names no exchange, and the runtime has no default (createMessaging({ defaultExchange }))',
      ]);
    }
    const routingKey = options.routingKey ?? event.type;
    // Publishing to an undeclared exchange is a channel error that would take the channel down.
    assertExchangeDeclared(topology, exchange);
    // To a queue by name: through its group's own exchange, bound to it by its name.
    const target =
      exchange === '' && plan.queues.some((q) => q.name === routingKey)
        ? queueExchangeName(groupOf(routingKey))
        : exchange;
    const body = Buffer.from(JSON.stringify(event));
    if (deps.maxMessageBytes !== undefined && body.length > deps.maxMessageBytes)
      throw new MessageTooLargeError(body.length, deps.maxMessageBytes);
    const props: Options.Publish = {
      mandatory: true,
      persistent: true,
      contentType: 'application/json',
      messageId: event.id,
      type: event.type,
      timestamp: Math.floor(Date.parse(event.occurredAt) / 1000) || Math.floor(Date.now() / 1000),
      correlationId: event.correlationId,
      ...(deps.userId !== undefined ? { userId: deps.userId } : {}),
      headers: { ...options.headers, 'x-schema-version': event.version },
    };
    const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
    const stop = metrics.publishDuration.startTimer({ exchange, message_type: event.type });
    try {
      await channel.publish(target, routingKey, body, { ...props, timeout: timeoutMs });
    } catch (err) {
      returned.delete(event.id);
      const mapped = mapPublishError(err, exchange, routingKey, timeoutMs);
      metrics.published.inc({ exchange, message_type: event.type, outcome: mapped.name });
      throw mapped;
    } finally {
      stop();
    }
    const replyText = returned.get(event.id);
    if (replyText !== undefined) {
      returned.delete(event.id);
      metrics.published.inc({ exchange, message_type: event.type, outcome: 'unroutable' });
      throw new UnroutableError(exchange, routingKey, replyText);
    }
    metrics.published.inc({ exchange, message_type: event.type, outcome: 'confirmed' });
  }

  return { publish, ready: () => Promise.race([channel.waitForConnect(), refused]), close: () => channel.close() };
}

function mapPublishError(err: unknown, exchange: string, routingKey: string, timeoutMs: number): Error {
  const message = err instanceof Error ? err.message : String(err);
  // amqp-connection-manager rejects with a bare Error('timeout'); amqplib's confirm callback with
  // Error('message nacked'). These two strings are the libraries' API, not free text.
  if (message === 'timeout') return new PublishTimeoutError(timeoutMs);
  if (message === 'message nacked') return new PublishRejectedError(exchange, routingKey);
  return err instanceof Error ? err : new Error(message);
}
