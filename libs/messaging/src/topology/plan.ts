import {
  DEFAULT_DEAD_LETTER_EXCHANGE,
  DEFAULT_POLICY_PREFIX,
  dlqName,
  escapeRegex,
  policyName,
  queueExchangeName,
  retryQueueName,
} from './names';
import type { BindingSpec, Topology, TopologyPlan } from './types';

/**
 * Above the restart budget: on RabbitMQ 3.10–3.13 every return of a message counts toward the
 * limit, a graceful stop or a lost channel included, and a healthy message in a backlog must
 * survive at least 20 consumer restarts (docs/MESSAGING.md, "Delivery limit versus restarts").
 */
export const DEFAULT_DELIVERY_LIMIT = 50;
/**
 * A DLQ's delivery limit. A DLQ has no dead-letter exchange (a dead letter has nowhere further to
 * go), so past its limit a message is dropped, and since RabbitMQ 4.0 a quorum queue with no limit
 * set has one of 20 (rabbitmq-server #11937). So every DLQ gets this explicit limit, valid on 3.x and
 * 4.x, far above what its delivery count can reach: its only consumer, the reconciler's ingest,
 * never requeues (a copy it cannot store yet stays unacked on its channel), so the count rises only
 * when that channel is lost with the copy unacked (a broker or connection loss, the broker's
 * `consumer_timeout` during a long database outage) or when it is peeked with requeue (the
 * management UI's "Get messages", `ops why` looking into the DLQs: each peek counts, checked on
 * 3.10). 10,000 such returns: months of a database outage at one return per 30-minute consumer
 * timeout. `-1` (no limit) exists on 4.x only; 3.x refuses it (docs/MESSAGING.md, "RabbitMQ 4.x").
 */
export const DLQ_DELIVERY_LIMIT = 10_000;

/**
 * Where a quorum queue's leader goes when it is declared: `balanced` puts it on the node leading
 * the fewest (3.10+; `client-local`, the default, puts every leader on the node the declaring
 * client is connected to, and a definitions import declares everything on the importing node).
 * In every policy of a group: a queue takes the keys of ONE policy (the highest priority), so a
 * key missing from one of them would leave its queues to the default (docs/MESSAGING.md "Leader placement").
 */
export const QUEUE_LEADER_LOCATOR = 'balanced';
export const DEFAULT_MAX_LENGTH = 1_000_000;

/**
 * Spells out everything the broker needs. Why each piece is where it is:
 *
 * - Every queue is a quorum queue: only quorum queues dead-letter at-least-once and enforce a
 *   delivery limit. `x-queue-type` can only be an argument.
 * - Work-queue tunables (dead-letter exchange, delivery-limit, max-length, overflow) live in a
 *   policy, so an operator can change them in the management UI without a redeploy.
 * - A full work queue drops its *oldest* message into its DLQ (`overflow=drop-head`, x-death
 *   reason `maxlen`) instead of nacking the publish: one publish reaches several queues, and
 *   `reject-publish` would refuse it for all of them because one is full.
 * - Retry tiers carry their TTL and their way home as arguments: they are the tier's identity
 *   (the name says "5s"), and a retry returns to its own work queue through the default exchange,
 *   never through the topic exchange (which would redeliver it to every other consumer).
 *   One fixed TTL per tier, because a quorum queue only expires messages at its head.
 * - Every queue has an explicit delivery limit, work queues, retry tiers and DLQs alike (a policy
 *   each): RabbitMQ 4.0 gives a quorum queue without one a limit of 20, so nothing may rely on the
 *   broker's default. A retry tier has no consumer (its messages only expire), so its limit is the
 *   work queue's and never reached; a DLQ's is DLQ_DELIVERY_LIMIT.
 * - Every policy sets `queue-leader-locator: balanced` (QUEUE_LEADER_LOCATOR): leaders spread over
 *   the cluster's nodes whichever node declares the queue.
 * - No `x-expires` anywhere: a retry queue or DLQ must never vanish with messages in it.
 * - Each work queue's group has a direct exchange of its own (`<queue>.direct`), bound to the work
 *   queue, each tier and the DLQ by their names: the runtime publishes retry and DLQ copies (and
 *   sends to a queue by name) through it, never through the default exchange, so a broker user
 *   needs write only on its own groups' exchanges (docs/MESSAGING.md "Broker identity"). The tiers'
 *   way home stays the default exchange: broker dead-lettering is not a publish and needs no
 *   permission, and changing a tier's arguments would be a drift on every existing broker.
 */
export function plan(topology: Topology): TopologyPlan {
  const dlx = topology.deadLetterExchange ?? DEFAULT_DEAD_LETTER_EXCHANGE;
  const policyPrefix = topology.policyPrefix ?? DEFAULT_POLICY_PREFIX;
  const result: TopologyPlan = {
    exchanges: [...topology.exchanges, { name: dlx, type: 'direct' }],
    queues: [],
    bindings: [],
    exchangeBindings: [],
    policies: [],
  };
  for (const x of topology.exchanges) {
    for (const b of x.bindings ?? []) {
      for (const { routingKey, arguments: args } of bindingKeys(b)) {
        result.exchangeBindings.push({
          source: b.exchange,
          destination: x.name,
          routingKey,
          ...(args ? { arguments: args } : {}),
        });
      }
    }
  }
  // Declared exchanges carry no `bindings` key in the plan: those are spelled out above.
  result.exchanges = result.exchanges.map(({ name, type }) => ({ name, type }));
  for (const q of topology.queues) {
    result.queues.push({
      name: q.name,
      role: 'work',
      arguments: {
        'x-queue-type': 'quorum',
        ...(q.singleActiveConsumer ? { 'x-single-active-consumer': true } : {}),
      },
    });
    for (const delay of q.retryDelaysMs) {
      result.queues.push({
        name: retryQueueName(q.name, delay),
        role: 'retry',
        arguments: {
          'x-queue-type': 'quorum',
          'x-message-ttl': delay,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': q.name,
          'x-dead-letter-strategy': 'at-least-once',
          'x-overflow': 'reject-publish',
        },
      });
    }
    result.queues.push({ name: dlqName(q.name), role: 'dlq', arguments: { 'x-queue-type': 'quorum' } });
    const own = queueExchangeName(q.name);
    result.exchanges.push({ name: own, type: 'direct' });
    for (const name of [q.name, ...q.retryDelaysMs.map((d) => retryQueueName(q.name, d)), dlqName(q.name)]) {
      result.bindings.push({ exchange: own, queue: name, routingKey: name });
    }

    for (const b of q.bindings) {
      for (const { routingKey, arguments: args } of bindingKeys(b)) {
        result.bindings.push({ exchange: b.exchange, queue: q.name, routingKey, ...(args ? { arguments: args } : {}) });
      }
    }
    // Broker dead-lettering (delivery limit) reaches the DLQ through the DLX, keyed by queue name.
    result.bindings.push({ exchange: dlx, queue: dlqName(q.name), routingKey: q.name });

    result.policies.push({
      name: policyName(policyPrefix, q.name),
      pattern: `^${escapeRegex(q.name)}$`,
      applyTo: 'queues',
      priority: 10,
      definition: {
        'dead-letter-exchange': dlx,
        'dead-letter-routing-key': q.name,
        overflow: 'drop-head',
        'delivery-limit': q.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
        'max-length': q.maxLength ?? DEFAULT_MAX_LENGTH,
        'queue-leader-locator': QUEUE_LEADER_LOCATOR,
      },
    });
    // The tiers keep their dead-letter way home as arguments (see above); the policy adds only the
    // explicit limit, which a queue argument cannot add to an existing queue without a drift.
    if (q.retryDelaysMs.length > 0) {
      result.policies.push({
        name: policyName(policyPrefix, `${q.name}.retry`),
        pattern: `^${escapeRegex(q.name)}\\.retry\\.[^.]+$`,
        applyTo: 'queues',
        priority: 10,
        definition: {
          'delivery-limit': q.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
          'queue-leader-locator': QUEUE_LEADER_LOCATOR,
        },
      });
    }
    result.policies.push({
      name: policyName(policyPrefix, dlqName(q.name)),
      pattern: `^${escapeRegex(dlqName(q.name))}$`,
      applyTo: 'queues',
      priority: 10,
      definition: { 'delivery-limit': DLQ_DELIVERY_LIMIT, 'queue-leader-locator': QUEUE_LEADER_LOCATOR },
    });
  }
  return result;
}

/**
 * One AMQP binding per routing key; a header binding is one binding with an empty routing key
 * (a headers exchange ignores it) and `x-match` plus the headers as its arguments.
 */
function bindingKeys(b: BindingSpec): Array<{ routingKey: string; arguments?: Record<string, unknown> }> {
  if (b.headers !== undefined) return [{ routingKey: '', arguments: { 'x-match': b.match ?? 'all', ...b.headers } }];
  return (b.routingKeys ?? []).map((routingKey) => ({ routingKey }));
}
