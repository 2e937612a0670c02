import type { Pool } from 'pg';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, PREFERENCE_LOCKED_TYPES, QUEUES } from '@community/contracts';
import type { DueWork, LostWorkKind } from '../domain/lost-work';

/**
 * The due rows of each lost-work kind (domain/lost-work.ts), read-only, from the tables the owners
 * of the work write. Every kind is one SELECT over a time window [since, until) of the column that
 * says when the work became due (the outbox row's sent_at, the lease's expiry, the fan-out's
 * planning), so that the check (a count over the lookback) and the re-drive (the rows themselves,
 * for an operator's --since/--until) read exactly the same rows. docs/RECONCILER.md "Lost work".
 */

/** The notification-service queues that record an inbox row (processed_events.consumer = queue) per event. */
export const INBOX_QUEUES = [QUEUES.notificationCritical, QUEUES.notificationStandard] as const;
export const EMAIL_QUEUE = QUEUES.emailSend;
export const FANOUT_QUEUE = QUEUES.feedFanout;

/** The routing keys the topology binds to a queue on the events exchange. */
export function routingKeysOf(queue: string): string[] {
  const q = COMMUNITY_TOPOLOGY.queues.find((x) => x.name === queue);
  return (q?.bindings ?? []).flatMap((b) =>
    'routingKeys' in b && b.exchange === EVENTS_EXCHANGE ? (b.routingKeys ?? []) : [],
  );
}

export interface Window {
  since: Date;
  until: Date;
}

/** One due row, with what a re-drive publishes for it. */
export interface DueRow {
  kind: LostWorkKind;
  queue: string;
  /** The outbox event id (the message id consumers deduplicate on), or `<postId>#<chunkNo>`. */
  id: string;
  at: Date;
  /** The envelope as its producer published it; null for a fan-out chunk, or a lease whose outbox row retention removed. */
  payload: Record<string, unknown> | null;
  /** email-lease: the ledger row's idempotency key. */
  idempotencyKey?: string;
}

// A dead letter the DLQ console holds is seen work, not lost work (its message id is the event id).
const NOT_DEAD = `NOT EXISTS (SELECT 1 FROM dlq_messages dl WHERE dl.message_id = o.event_id::text)`;

/** The immediate / digest decision email-service will take: a locked type (security alert) is always immediate (apps/email-service domain/channel.ts). */
const CHANNEL = `(CASE WHEN o.payload->'data'->>'type' = ANY($3::text[]) THEN 'immediate' ELSE o.payload->'data'->>'emailChannel' END)`;

interface Query {
  queue: string;
  /** Selects id, at, payload [, key]; $1 since, $2 until, then `params`. */
  sql: string;
  params: unknown[];
}

function queriesOf(kind: LostWorkKind): Query[] {
  switch (kind) {
    case 'event':
      return INBOX_QUEUES.map((queue) => ({
        queue,
        sql: `SELECT o.event_id::text AS id, o.sent_at AS at, o.payload FROM outbox_messages o
               WHERE o.sent_at >= $1 AND o.sent_at < $2 AND o.routing_key = ANY($4::text[])
                 AND NOT EXISTS (SELECT 1 FROM processed_events p WHERE p.consumer = $3 AND p.event_id = o.event_id::text) AND ${NOT_DEAD}`,
        params: [queue, routingKeysOf(queue)],
      }));
    case 'email':
    case 'digest':
      return [
        {
          queue: EMAIL_QUEUE,
          // No ledger row and no digest item: email-service never decided. A digest item the user
          // opted out of is not collected (no row either): such users are left out (a false
          // negative for them, never a false alarm).
          sql: `SELECT o.event_id::text AS id, o.sent_at AS at, o.payload FROM outbox_messages o
                 WHERE o.producer = 'notification-service' AND o.event_type = 'notification.created' AND o.sent_at IS NOT NULL
                   AND o.sent_at >= $1 AND o.sent_at < $2 AND ${CHANNEL} = $4
                   AND NOT EXISTS (SELECT 1 FROM email_deliveries d WHERE d.idempotency_key = o.payload->'data'->>'idempotencyKey' AND d.channel = 'immediate')
                   AND NOT EXISTS (SELECT 1 FROM email_digest_items i WHERE i.idempotency_key = o.payload->'data'->>'idempotencyKey')
                   AND ($4 = 'immediate' OR NOT EXISTS (SELECT 1 FROM email_suppressions s WHERE s.user_id = o.payload->'data'->>'userId' AND s.scope IN ('digest', o.payload->'data'->>'type')))
                   AND ${NOT_DEAD}`,
          params: [[...PREFERENCE_LOCKED_TYPES], kind === 'email' ? 'immediate' : 'digest'],
        },
      ];
    case 'email-lease':
      return [
        {
          queue: EMAIL_QUEUE,
          // The envelope is the notification.created of the key, while the outbox keeps it.
          sql: `SELECT coalesce(o.event_id::text, 'key:' || d.idempotency_key) AS id, d.lease_until AS at, o.payload, d.idempotency_key AS key
                  FROM email_deliveries d
                  LEFT JOIN LATERAL (SELECT event_id, payload FROM outbox_messages o
                                      WHERE o.producer = 'notification-service' AND o.event_type = 'notification.created' AND o.aggregate_id = d.user_id
                                        AND o.payload->'data'->>'idempotencyKey' = d.idempotency_key ORDER BY o.id LIMIT 1) o ON true
                 WHERE d.channel = 'immediate' AND d.state = 'sending' AND d.lease_until >= $1 AND d.lease_until < $2`,
          params: [],
        },
      ];
    case 'fanout-chunk':
      return [
        {
          queue: FANOUT_QUEUE,
          sql: `SELECT c.post_id || '#' || c.chunk_no AS id, j.planned_at AS at, NULL::jsonb AS payload FROM feed_fanout_chunks c JOIN feed_fanout_jobs j ON j.post_id = c.post_id
                 WHERE j.done_at IS NULL AND c.done_at IS NULL AND j.planned_at >= $1 AND j.planned_at < $2`,
          params: [],
        },
      ];
  }
}

/** How long after its row each kind is due without its message (the `until` of the check's window). */
export interface DueAfter {
  /** Outbox rows published longer ago than this: their message reached its queue or was lost. */
  graceMs: number;
  /** A lease expired longer ago than this (STUCK_LEASE_GRACE_MS). */
  leaseGraceMs: number;
  /** A fan-out planned longer ago than this (STUCK_FANOUT_AFTER_MS). */
  fanoutAfterMs: number;
}

export function dueWindow(kind: LostWorkKind, now: Date, lookbackMs: number, o: DueAfter): Window {
  const after = kind === 'email-lease' ? o.leaseGraceMs : kind === 'fanout-chunk' ? o.fanoutAfterMs : o.graceMs;
  return { since: new Date(now.getTime() - lookbackMs), until: new Date(now.getTime() - after) };
}

/** The due rows of every kind in their windows, counted per (kind, queue): what the check compares with the queues. */
export async function countDue(
  pool: Pool,
  windows: (kind: LostWorkKind) => Window,
  kinds: readonly LostWorkKind[],
): Promise<DueWork[]> {
  const parts = await Promise.all(
    kinds.flatMap((kind) =>
      queriesOf(kind).map(async (q) => {
        const w = windows(kind);
        const { rows } = await pool.query<{ n: number; oldest: Date | null }>(
          `SELECT count(*)::int AS n, min(at) AS oldest FROM (${q.sql}) due`,
          [w.since, w.until, ...q.params],
        );
        return { kind, queue: q.queue, rows: rows[0].n, oldest: rows[0].oldest ? rows[0].oldest.toISOString() : null };
      }),
    ),
  );
  return parts;
}

/** The due rows of one kind in a window, oldest first, at most `limit` (plus one, to tell whether more remain). */
export async function dueRows(
  pool: Pool,
  kind: LostWorkKind,
  w: Window,
  limit: number,
): Promise<{ rows: DueRow[]; more: boolean }> {
  const out: DueRow[] = [];
  for (const q of queriesOf(kind)) {
    const { rows } = await pool.query<{ id: string; at: Date; payload: Record<string, unknown> | null; key?: string }>(
      `${q.sql} ORDER BY at, id LIMIT ${limit + 1}`,
      [w.since, w.until, ...q.params],
    );
    for (const r of rows)
      out.push({
        kind,
        queue: q.queue,
        id: r.id,
        at: r.at,
        payload: r.payload,
        ...(r.key !== undefined ? { idempotencyKey: r.key } : {}),
      });
  }
  out.sort((a, b) => a.at.getTime() - b.at.getTime() || a.id.localeCompare(b.id));
  return { rows: out.slice(0, limit), more: out.length > limit };
}
