import type { Pool, PoolClient } from 'pg';

/** What the store's functions run on: the pool, or a transaction's client. */
export type Db = Pool | PoolClient;

/**
 * How long a discard can be undone (`restore`): DLQ_RETENTION_DAYS, the age at which the
 * retention job purges a discarded row (docs/DLQ-CONSOLE.md "Discard"). 30 days, its default,
 * unless the reconciler passes its configured value.
 */
export const DEFAULT_RESTORE_WINDOW_MS = 30 * 86_400_000;

/** One dead letter as the console lists it; its columns and their mapping, shared by the listings. */
export interface MessageRow {
  id: string;
  queue: string;
  originalQueue: string;
  messageId: string;
  deadLetteredAt: string;
  messageType: string | null;
  routingKey: string | null;
  errorClass: string;
  errorMessage: string;
  errorKind: string;
  handler: string | null;
  attempts: number;
  fingerprint: string;
  state: string;
  replayCount: number;
  actedAt: string | null;
}

export const MESSAGE_COLUMNS = `m.id::text, m.queue, m.original_queue, m.message_id, m.dead_lettered_at, m.message_type, m.routing_key,
  m.error_class, m.error_message, m.error_kind, m.handler, m.attempts, m.fingerprint, m.state, m.replay_count, m.acted_at`;

export function messageRow(r: Record<string, unknown>): MessageRow {
  return {
    id: r.id as string,
    queue: r.queue as string,
    originalQueue: r.original_queue as string,
    messageId: r.message_id as string,
    deadLetteredAt: new Date(r.dead_lettered_at as string).toISOString(),
    messageType: r.message_type as string | null,
    routingKey: r.routing_key as string | null,
    errorClass: r.error_class as string,
    errorMessage: r.error_message as string,
    errorKind: r.error_kind as string,
    handler: r.handler as string | null,
    attempts: r.attempts as number,
    fingerprint: r.fingerprint as string,
    state: r.state as string,
    replayCount: r.replay_count as number,
    actedAt: r.acted_at ? new Date(r.acted_at as string).toISOString() : null,
  };
}
