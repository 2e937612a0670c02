import type { PoolClient } from 'pg';
import { buildEvent, type EventData, type EventType } from '@community/contracts';
import { enqueueEvents, type OutboxItem } from '@community/outbox';

/** The producer name in every envelope and in the outbox (`outbox_messages.producer`). */
export const PRODUCER = 'community-api';

/**
 * Collects the events of one request and enqueues them in the request's transaction. Each event is
 * ordered under the user whose notifications or feed it concerns (its aggregate): the mentioned
 * user, the parent comment's or post's author, the followee, the reacted-to author, the alerted user.
 */
export class EventBatch {
  private readonly items: OutboxItem[] = [];
  constructor(private readonly correlationId: string) {}

  add<T extends EventType>(type: T, data: EventData<T>, aggregateId: string): this {
    const event = buildEvent(type, data, { producer: PRODUCER, correlationId: this.correlationId });
    this.items.push({ event, aggregateId } as OutboxItem);
    return this;
  }

  enqueue(tx: PoolClient): Promise<void> {
    return enqueueEvents(tx, PRODUCER, this.items);
  }
}
