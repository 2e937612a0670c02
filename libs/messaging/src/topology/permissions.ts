import { ownQueueNames } from './declare';
import { escapeRegex, queueExchangeName } from './names';
import type { Topology, TopologyPlan } from './types';

/**
 * What one service does on the broker, as data (the community's is `SERVICE_ACCESS` in
 * libs/contracts, next to the topology). The broker users, their permissions, the KEDA triggers
 * and the permission tests are all derived from it, so they cannot disagree.
 */
export interface ServiceAccess {
  /** The broker user (and the service's name). */
  user: string;
  /**
   * Work queues it consumes. It owns their group: it declares the queue, its retry tiers and its
   * DLQ, binds them, and publishes retry/DLQ copies to them through the group's own exchange
   * (`<queue>.direct`).
   */
  consumes: string[];
  /** Routing keys it publishes, per exchange. */
  publishes: Array<{ exchange: string; routingKeys: string[] }>;
  /**
   * Work queues it sends to by name, beyond its own retry/DLQ copies (feed-service feeding its
   * fan-out queue, the reconciler replaying to the original queue): through each one's own exchange
   * (`<queue>.direct`), on which it gets write. Never the default exchange: RabbitMQ authorises
   * that as a whole (`amq.default`), so write on it would reach every queue of the vhost.
   */
  sendsTo: string[];
  /** Queues it reads (consumes, gets, acks) besides its own: the reconciler reads every DLQ. */
  reads: string[];
  /** Management API tags: `management` (its vhost's queues: the policy check), `monitoring` (all). */
  tags: Array<'management' | 'monitoring' | 'policymaker' | 'administrator'>;
}

/** A user's permissions on one vhost, in the broker's terms: three regexes, plus per topic exchange two more on routing keys. */
export interface Permissions {
  configure: string;
  write: string;
  read: string;
  /** Topic authorisation: `write` is matched against published routing keys, `read` against binding keys. */
  topic: Array<{ exchange: string; write: string; read: string }>;
}

/** The default exchange, as RabbitMQ names it in permission checks: no service user may write to it. */
export const DEFAULT_EXCHANGE_RESOURCE = 'amq.default';

/** `^(a|b)$` over the escaped names; `^$` (nothing: an empty name is never a resource) for none. */
export function exactly(names: Iterable<string>): string {
  const list = [...new Set(names)].sort();
  return list.length === 0 ? '^$' : `^(${list.map(escapeRegex).join('|')})$`;
}

/**
 * Least privilege from what the service does (RabbitMQ's access-control table):
 * - configure (declare, delete): only its own queues (work, retry tiers, DLQ). Never an exchange:
 *   the exchanges and policies are the topology admin's, and configure would let it delete them.
 * - write: its own queues (queue.bind writes to the queue), the exchanges it publishes to, its own
 *   groups' exchanges (retry/DLQ copies) and those of the queues it sends to by name. Never the
 *   default exchange (`amq.default`): write on it reaches every queue of the vhost.
 * - read: its own queues and the ones it reads (consume, get), and the exchanges its own queues
 *   bind from (queue.bind reads the exchange).
 * - topic exchanges: write only the routing keys it publishes, read only its own binding keys
 *   (without an entry a user may use every key).
 */
export function permissionsFor(topology: Topology, plan: TopologyPlan, access: ServiceAccess): Permissions {
  const own = ownQueueNames(plan, access.consumes);
  const ownSet = new Set(own);
  const ownBindings = plan.bindings.filter((b) => ownSet.has(b.queue));
  const topicExchanges = topology.exchanges.filter((x) => x.type === 'topic').map((x) => x.name);
  return {
    configure: exactly(own),
    write: exactly([
      ...own,
      ...access.publishes.map((p) => p.exchange),
      ...[...access.consumes, ...access.sendsTo].map(queueExchangeName),
    ]),
    read: exactly([...own, ...access.reads, ...ownBindings.map((b) => b.exchange)]),
    topic: topicExchanges.map((exchange) => ({
      exchange,
      write: exactly(access.publishes.filter((p) => p.exchange === exchange).flatMap((p) => p.routingKeys)),
      read: exactly(ownBindings.filter((b) => b.exchange === exchange).map((b) => b.routingKey)),
    })),
  };
}

/**
 * Refuses access data that names what the topology does not have: a queue, exchange or routing key
 * missing there would become a permission for nothing (or a KEDA trigger on nothing). Returns the
 * problems, empty when consistent.
 */
export function accessProblems(topology: Topology, plan: TopologyPlan, services: readonly ServiceAccess[]): string[] {
  const problems: string[] = [];
  const queues = new Set(plan.queues.map((q) => q.name));
  const work = new Set(topology.queues.map((q) => q.name));
  const exchanges = new Set(topology.exchanges.map((x) => x.name));
  const consumers = new Map<string, string>();
  for (const s of services) {
    for (const q of s.consumes) {
      if (!work.has(q)) problems.push(`${s.user}: consumes "${q}", which is not a work queue of the topology`);
      if (consumers.has(q)) problems.push(`${s.user}: consumes "${q}", already owned by ${consumers.get(q)}`);
      consumers.set(q, s.user);
    }
    for (const q of s.sendsTo)
      if (!work.has(q)) problems.push(`${s.user}: sends to "${q}", which is not a work queue of the topology`);
    for (const q of s.reads)
      if (!queues.has(q)) problems.push(`${s.user}: names queue "${q}", which the topology does not derive`);
    for (const p of s.publishes)
      if (!exchanges.has(p.exchange))
        problems.push(`${s.user}: publishes to "${p.exchange}", which is not an exchange of the topology`);
    // Who may publish what is declared once, in the topology: a routing key a service may publish
    // but that names it nowhere as a producer would be refused by every consumer.
    if (topology.producers) {
      for (const key of s.publishes.flatMap((p) => p.routingKeys)) {
        if (!(topology.producers[key] ?? []).includes(s.user))
          problems.push(
            `${s.user}: publishes "${key}", but topology.producers does not name it as a producer of that type`,
          );
      }
    }
  }
  for (const [type, producers] of Object.entries(topology.producers ?? {})) {
    for (const p of producers) {
      const access = services.find((s) => s.user === p);
      if (!access) problems.push(`topology.producers["${type}"]: "${p}" has no broker access`);
      else if (!access.publishes.some((x) => x.routingKeys.includes(type)))
        problems.push(`topology.producers["${type}"]: "${p}" may not publish that routing key`);
    }
  }
  return problems;
}
