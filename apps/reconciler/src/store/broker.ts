import { managementRequest, type ManagementTarget } from '@community/messaging';

/** One queue as the RabbitMQ management API reports it (the fields the reconciler reads). */
export interface QueueSample {
  name: string;
  messages: number;
  ready: number;
  unacked: number;
  consumers: number;
  /** Cumulative acks since the queue was created (message_stats.ack), 0 when never acked. */
  acked: number;
  /** Acks per second over the broker's last sampling window. */
  ackRate: number;
  /** Unix seconds of the head message's timestamp, when the broker reports it (classic queues). */
  headTimestamp: number | null;
}

interface ApiQueue {
  name: string;
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  head_message_timestamp?: number | null;
  message_stats?: { ack?: number; ack_details?: { rate?: number } };
}

/** Every queue of the target's vhost. Throws with the HTTP status when the API refuses. */
export async function sampleQueues(target: ManagementTarget): Promise<QueueSample[]> {
  const res = await managementRequest(target, 'GET', `/queues/${encodeURIComponent(target.vhost)}`);
  if (!res.ok) throw new Error(`RabbitMQ management API answered ${res.status} for GET /queues/${target.vhost}`);
  const body = (await res.json()) as ApiQueue[];
  return body.map((q) => ({
    name: q.name,
    messages: q.messages ?? 0,
    ready: q.messages_ready ?? 0,
    unacked: q.messages_unacknowledged ?? 0,
    consumers: q.consumers ?? 0,
    acked: q.message_stats?.ack ?? 0,
    ackRate: q.message_stats?.ack_details?.rate ?? 0,
    headTimestamp: typeof q.head_message_timestamp === 'number' ? q.head_message_timestamp : null,
  }));
}

/** The DLQ of a work queue (libs/messaging names it so: `<queue>.dlq`). */
export const dlqOf = (queue: string): string => `${queue}.dlq`;
