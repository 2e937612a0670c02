import { randomUUID } from 'node:crypto';
import { buildEvent, type EventOf } from '@community/contracts';
import type { Topology } from '../src';

/** A valid user.mentioned event whose excerpt can carry a test instruction. */
export function mention(excerpt = 'hello', id = randomUUID()): EventOf<'user.mentioned'> {
  return buildEvent(
    'user.mentioned',
    { commentId: `c-${id}`, postId: 'p-1', actorId: 'u-1', mentionedUserId: 'u-2', excerpt },
    { producer: 'test', id },
  );
}

/** One queue per scenario, each bound to its own routing key, with short retry tiers. */
export function testTopology(queues: Array<{ name: string; retryDelaysMs?: number[]; deliveryLimit?: number }>): Topology {
  return {
    exchanges: [{ name: 'community.events', type: 'topic' }],
    queues: queues.map((q) => ({
      name: q.name,
      bindings: [{ exchange: 'community.events', routingKeys: [q.name] }],
      retryDelaysMs: q.retryDelaysMs ?? [300, 600],
      deliveryLimit: q.deliveryLimit ?? 3,
    })),
  };
}
