import { dlqName } from './names';
import { DLQ_DELIVERY_LIMIT } from './plan';

/**
 * What the broker will do with a queue's dead letters and redeliveries, computed from its arguments
 * and the policies that would apply to it, with RabbitMQ's rules for quorum queues: of the policies
 * whose pattern matches and that apply to queues, the one of the highest priority wins (a tie is
 * ambiguous: the broker picks one, so it is reported); a queue argument wins over the policy for the
 * dead-letter exchange and routing key, and the lower of the two wins for the delivery limit.
 *
 * Read by the specs over the generated definitions and over `plan()`: no queue may rely on a broker
 * default, because the defaults changed (RabbitMQ 4.0: a delivery limit of 20 where there was none).
 */
export interface QueueFacts {
  name: string;
  arguments: Record<string, unknown>;
}

export interface PolicyFacts {
  name: string;
  pattern: string;
  applyTo: string;
  priority: number;
  definition: Record<string, unknown>;
}

export interface EffectiveSettings {
  /** The policies that win (one, or a tie). */
  policies: string[];
  deadLetterExchange?: string;
  deadLetterRoutingKey?: string;
  deliveryLimit?: number;
}

const APPLIES_TO_QUEUES = new Set(['queues', 'all', 'quorum_queues']);

export function effectiveSettings(queue: QueueFacts, policies: readonly PolicyFacts[]): EffectiveSettings {
  const matching = policies.filter((p) => APPLIES_TO_QUEUES.has(p.applyTo) && new RegExp(p.pattern).test(queue.name));
  const top = Math.max(...matching.map((p) => p.priority));
  const winners = matching.filter((p) => p.priority === top);
  const policy = winners.length === 1 ? winners[0].definition : {};
  const arg = (key: string) => queue.arguments[`x-${key}`];
  const pick = (key: string): string | undefined => {
    const v = arg(key) ?? policy[key];
    return typeof v === 'string' ? v : undefined;
  };
  const limits = [arg('delivery-limit'), policy['delivery-limit']].filter((v): v is number => typeof v === 'number');
  return {
    policies: winners.map((p) => p.name),
    deadLetterExchange: pick('dead-letter-exchange'),
    deadLetterRoutingKey: pick('dead-letter-routing-key'),
    deliveryLimit: limits.length > 0 ? Math.min(...limits) : undefined,
  };
}

export interface BrokerFacts {
  queues: readonly QueueFacts[];
  policies: readonly PolicyFacts[];
  exchanges: readonly string[];
  bindings: ReadonlyArray<{ source: string; destination: string; routingKey: string }>;
}

/**
 * Every queue's dead-letter path and delivery limit, explicit and sound, by role (told by name, as
 * `plan()` derives them):
 * - a work queue: one policy, a dead-letter exchange that exists and routes its routing key to the
 *   queue's DLQ, and a delivery limit;
 * - a retry tier (`<queue>.retry.<delay>`): dead-letters (on expiry) through the default exchange
 *   to its own work queue, and a delivery limit (it has no consumer; the limit is never reached);
 * - a DLQ (`<queue>.dlq`): no dead-letter exchange (a dead letter has nowhere further to go, and
 *   one back to a work queue would be a loop), so its limit is `DLQ_DELIVERY_LIMIT` or more.
 * Returns the problems, each naming its queue; empty when every queue is safe.
 */
export function deadLetterProblems(facts: BrokerFacts): string[] {
  const problems: string[] = [];
  const queues = new Set(facts.queues.map((q) => q.name));
  const exchanges = new Set(facts.exchanges);
  for (const q of facts.queues) {
    const s = effectiveSettings(q, facts.policies);
    const say = (what: string) => problems.push(`${q.name}: ${what}`);
    if (q.arguments['x-queue-type'] !== 'quorum') say(`is not a quorum queue (${String(q.arguments['x-queue-type'])})`);
    if (s.policies.length !== 1)
      say(
        `${s.policies.length === 0 ? 'no policy applies' : `policies tie at the highest priority: ${s.policies.join(', ')}`}`,
      );
    if (s.deliveryLimit === undefined) say('no explicit delivery limit (RabbitMQ 4.x would apply 20)');
    const retry = /^(.+)\.retry\.[^.]+$/.exec(q.name);
    if (q.name.endsWith('.dlq')) {
      if (s.deadLetterExchange !== undefined) say(`a DLQ must not dead-letter (it does to "${s.deadLetterExchange}")`);
      if (s.deliveryLimit !== undefined && s.deliveryLimit < DLQ_DELIVERY_LIMIT)
        say(
          `delivery limit ${s.deliveryLimit} is below DLQ_DELIVERY_LIMIT (${DLQ_DELIVERY_LIMIT}): past it a dead letter is dropped`,
        );
    } else if (retry) {
      if (s.deadLetterExchange !== '' || s.deadLetterRoutingKey !== retry[1])
        say(
          `expiry must return through the default exchange to "${retry[1]}" (has ${JSON.stringify([s.deadLetterExchange, s.deadLetterRoutingKey])})`,
        );
      if (!queues.has(retry[1])) say(`its work queue "${retry[1]}" does not exist`);
    } else {
      const dlq = dlqName(q.name);
      if (s.deadLetterExchange === undefined || s.deadLetterExchange === '')
        say('no dead-letter exchange: a message past its delivery limit or max-length would be dropped');
      else if (!exchanges.has(s.deadLetterExchange))
        say(`dead-letter exchange "${s.deadLetterExchange}" does not exist`);
      else if (
        !facts.bindings.some(
          (b) =>
            b.source === s.deadLetterExchange &&
            b.destination === dlq &&
            b.routingKey === (s.deadLetterRoutingKey ?? q.name),
        )
      ) {
        say(
          `its dead letters (exchange "${s.deadLetterExchange}", key "${s.deadLetterRoutingKey ?? q.name}") do not reach "${dlq}"`,
        );
      }
      if (!queues.has(dlq)) say(`its DLQ "${dlq}" does not exist`);
    }
  }
  return problems;
}
