import type { Channel } from 'amqplib';
import { dlqName } from './names';
import type { TopologyPlan } from './types';

/**
 * An exchange or queue already exists on the broker with other arguments than the topology gives
 * it (the classic PRECONDITION_FAILED). It cannot be fixed by retrying: arguments of an existing
 * queue never change in place. The message names the entity and carries the broker's reply, which
 * says which argument differs.
 */
export class TopologyDriftError extends Error {
  override readonly name = 'TopologyDriftError';
  constructor(
    readonly kind: 'exchange' | 'queue',
    readonly entity: string,
    readonly reply: string,
  ) {
    super(
      `${kind} "${entity}" exists on the broker with other arguments than the topology declares (${reply}). ` +
        `Arguments of an existing ${kind} cannot change: move its messages and delete it, or declare it under a new name.`,
    );
  }
}

/**
 * The idempotent AMQP half of the setup, run on every (re)connect of every channel the runtime
 * opens (so a consumer never races a queue that is not there yet). Four small steps.
 * Declaring an existing entity with the same arguments is a no-op; different arguments are a
 * PRECONDITION_FAILED, which is why arguments come only from `plan()`, and why a drift is reported
 * as a TopologyDriftError naming the entity instead of a bare channel error.
 */
export async function declareTopology(channel: Channel, plan: TopologyPlan): Promise<void> {
  await assertExchanges(channel, plan);
  await bindExchanges(channel, plan);
  await assertQueues(channel, plan);
  await bindQueues(channel, plan);
}

/**
 * The least-privilege half (provisioning `own-queues`): the exchanges, the policies and every queue
 * are provisioned by a topology administrator (definitions, the Messaging Topology Operator), and a
 * service's broker user may configure only its own queues. So the exchanges are only checked
 * (a passive declare needs no permission; a missing one fails the setup with NOT_FOUND), and the
 * given work queues are declared with their retry tiers and DLQ and bound, which a service may do
 * with configure and write on its own queues and read on the exchanges. `queues` empty (a pure
 * publisher): only the check.
 */
export async function declareOwnQueues(channel: Channel, plan: TopologyPlan, queues: readonly string[]): Promise<void> {
  await Promise.all(plan.exchanges.map((x) => channel.checkExchange(x.name)));
  const own = new Set(ownQueueNames(plan, queues));
  const mine: TopologyPlan = {
    exchanges: [],
    exchangeBindings: [], // the topology admin's, like the exchanges
    queues: plan.queues.filter((q) => own.has(q.name)),
    bindings: plan.bindings.filter((b) => own.has(b.queue)),
    policies: [],
  };
  await assertQueues(channel, mine);
  await bindQueues(channel, mine);
}

/** A work queue's group: the queue, its retry tiers and its DLQ, as plan() names them. */
export function ownQueueNames(plan: TopologyPlan, workQueues: readonly string[]): string[] {
  const work = new Set(workQueues);
  return plan.queues
    .filter(
      (q) =>
        work.has(q.name) ||
        (q.role === 'retry' && work.has(String(q.arguments['x-dead-letter-routing-key']))) ||
        (q.role === 'dlq' && workQueues.some((w) => dlqName(w) === q.name)),
    )
    .map((q) => q.name);
}

async function assertExchanges(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(
    plan.exchanges.map((x) =>
      channel.assertExchange(x.name, x.type, { durable: true }).catch(driftOf('exchange', x.name)),
    ),
  );
}

async function assertQueues(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(
    plan.queues.map((q) =>
      channel.assertQueue(q.name, { durable: true, arguments: q.arguments }).catch(driftOf('queue', q.name)),
    ),
  );
}

async function bindExchanges(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(
    (plan.exchangeBindings ?? []).map((b) => channel.bindExchange(b.destination, b.source, b.routingKey, b.arguments)),
  );
}

async function bindQueues(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(plan.bindings.map((b) => channel.bindQueue(b.queue, b.exchange, b.routingKey, b.arguments)));
}

/** AMQP reply code 406 PRECONDITION_FAILED, by code (amqplib sets `code` on channel errors). */
const PRECONDITION_FAILED = 406;

function driftOf(kind: 'exchange' | 'queue', entity: string) {
  return (err: unknown): never => {
    const e = err as { code?: unknown; message?: unknown };
    if (e?.code === PRECONDITION_FAILED) throw new TopologyDriftError(kind, entity, String(e.message));
    throw err;
  };
}
