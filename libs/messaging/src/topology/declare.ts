import type { Channel } from 'amqplib';
import type { TopologyPlan } from './types';

/**
 * The idempotent AMQP half of the setup, run on every (re)connect of every channel the runtime
 * opens (so a consumer never races a queue that is not there yet). Three small steps.
 * Declaring an existing entity with the same arguments is a no-op; different arguments are a
 * PRECONDITION_FAILED, which is why arguments come only from `plan()`.
 */
export async function declareTopology(channel: Channel, plan: TopologyPlan): Promise<void> {
  await assertExchanges(channel, plan);
  await assertQueues(channel, plan);
  await bindQueues(channel, plan);
}

async function assertExchanges(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(plan.exchanges.map((x) => channel.assertExchange(x.name, x.type, { durable: true })));
}

async function assertQueues(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(plan.queues.map((q) => channel.assertQueue(q.name, { durable: true, arguments: q.arguments })));
}

async function bindQueues(channel: Channel, plan: TopologyPlan): Promise<void> {
  await Promise.all(plan.bindings.map((b) => channel.bindQueue(b.queue, b.exchange, b.routingKey)));
}
