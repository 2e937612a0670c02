import { managementRequest, type ManagementTarget } from '@community/messaging';
import type { QueueSample } from '../domain/facts';

/**
 * The window the drain rate is averaged over. A minute: long enough that one 5 s sample with
 * almost no ack (a batch boundary, a consumer reconnecting) cannot turn a backlog into a
 * four-hour estimate, short enough to follow a drain that speeds up or stops. The broker keeps
 * 5 s samples for 10 minutes by default (management.sample_retention_policies), so 60 s is
 * within what it can answer.
 */
export const RATE_WINDOW_S = 60;

interface ApiQueue {
  name: string;
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  head_message_timestamp?: number | null;
  message_stats?: { ack?: number; ack_details?: { rate?: number; avg_rate?: number } };
  messages_ready_details?: { avg_rate?: number };
}

/** Every queue of the target's vhost. Throws with the HTTP status when the API refuses. */
export async function sampleQueues(target: ManagementTarget): Promise<QueueSample[]> {
  // msg_rates_age/msg_rates_incr make the broker add `avg_rate` over that window to every *_details.
  const res = await managementRequest(
    target,
    'GET',
    `/queues/${encodeURIComponent(target.vhost)}?msg_rates_age=${RATE_WINDOW_S}&msg_rates_incr=5`,
  );
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
    drainRate: q.message_stats?.ack_details?.avg_rate ?? 0,
    readyTrend: q.messages_ready_details?.avg_rate ?? 0,
  }));
}
