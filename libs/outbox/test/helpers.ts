import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { buildEvent, type EventOf } from '@community/contracts';
import type { Topology } from '@community/messaging';
import { withTransaction } from '@community/db';
import { enqueueEvents } from '../src';

export const PRODUCER = 'outbox-test';
export const QUEUE = 'test.outbox';

/** One queue bound to the routing keys the tests publish (`security.alert` is left unbound on purpose). */
export const topology: Topology = {
  exchanges: [{ name: 'community.events', type: 'topic' }],
  queues: [
    {
      name: QUEUE,
      bindings: [{ exchange: 'community.events', routingKeys: ['user.mentioned'] }],
      retryDelaysMs: [1000],
    },
  ],
};

/** A user.mentioned event whose excerpt carries its aggregate and sequence number. */
export function mention(aggregateId: string, seq: number): EventOf<'user.mentioned'> {
  return buildEvent(
    'user.mentioned',
    {
      commentId: `c-${seq}`,
      postId: 'p-1',
      actorId: 'u-actor',
      mentionedUserId: aggregateId,
      excerpt: `${aggregateId}#${seq}`,
    },
    { producer: PRODUCER, id: randomUUID() },
  );
}

export function alert(userId: string): EventOf<'security.alert'> {
  return buildEvent(
    'security.alert',
    { alertId: randomUUID(), userId, kind: 'new-login', detail: 'test' },
    { producer: PRODUCER },
  );
}

/** Commits the events in one transaction, each under the aggregate named in its data. */
export async function enqueue(
  pool: Pool,
  events: Array<EventOf<'user.mentioned'> | EventOf<'security.alert'>>,
): Promise<void> {
  await withTransaction(pool, (tx) =>
    enqueueEvents(
      tx,
      PRODUCER,
      events.map((event) => ({
        event,
        aggregateId: event.type === 'user.mentioned' ? event.data.mentionedUserId : event.data.userId,
      })),
    ),
  );
}

export async function unsentCount(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox_messages WHERE producer = $1 AND sent_at IS NULL',
    [PRODUCER],
  );
  return rows[0].n;
}
