import type { Pool } from 'pg';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, QUEUES } from '@community/contracts';
import { expiredLeasesSql, undecidedNotificationSql } from '@community/email-service';
import { pendingChunksSql } from '@community/feed-service';
import { notProcessedSql } from '@community/idempotency';
import {
  createdNotificationLookupSql,
  createdNotificationsSql,
  notificationCreatedOf,
  storedNotificationOf,
  type StoredNotificationRow,
} from '@community/notification-service';
import { sentEventsSql } from '@community/outbox';
import type { DueWork, LostWorkKind } from '../domain/lost-work';

/**
 * The due rows of each lost-work kind (domain/lost-work.ts), read-only, from the tables the owners
 * of the work write. Every kind is one SELECT over a time window [since, until) of the column that
 * says when the work became due (the outbox row's sent_at, the notification row's created_at, the
 * lease's expiry, the fan-out's planning), so that the check (a count over the lookback) and the
 * re-drive (the rows themselves, for an operator's --since/--until) read exactly the same rows.
 * docs/RECONCILER.md "Lost work".
 *
 * The SQL that names each table is its owner's export (the outbox's published rows,
 * notification-service's notification rows, which are the record of its notification.created, the
 * inbox's and email-service's "no record of it", feed-service's pending chunks); this file composes
 * them, and each value is bound by the statement's builder (`bind`), so no fragment picks a
 * parameter position.
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
  /**
   * The event id (the message id consumers deduplicate on: the outbox row's, or the notification
   * row's id for notification.created), `<postId>#<chunkNo>`, or `key:<key>` for a lease without
   * its notification.
   */
  id: string;
  at: Date;
  /**
   * The envelope to publish: as its producer published it (outbox kinds), or the notification.created
   * rebuilt from its row; null for a fan-out chunk, or when it cannot be had (`unavailable` says why).
   */
  payload: Record<string, unknown> | null;
  /** Why a row other than a fan-out chunk has no envelope to re-drive. */
  unavailable?: string;
  /** email-lease: the ledger row's idempotency key. */
  idempotencyKey?: string;
}

// A dead letter the DLQ console holds is seen work, not lost work (its message id is the event id).
const notDead = (eventId: string) => `NOT EXISTS (SELECT 1 FROM dlq_messages dl WHERE dl.message_id = ${eventId})`;

interface Query {
  queue: string;
  /** Selects `at` and `id` (what the rows are ordered by), and what `rowOf` reads. */
  sql: string;
  params: unknown[];
  /** The due row of one result row (absent: the columns id, at, payload [, key]). */
  rowOf?: (r: Record<string, unknown>) => Omit<DueRow, 'kind' | 'queue'>;
}

/** One statement's parameters: `bind` returns the next placeholder for a value. */
function statement(queue: string, build: (bind: (value: unknown) => string) => string, rowOf?: Query['rowOf']): Query {
  const params: unknown[] = [];
  const sql = build((value) => {
    params.push(value);
    return `$${params.length}`;
  });
  return { queue, sql, params, rowOf };
}

/**
 * The notification.created of a stored notification row (STORED_NOTIFICATION_COLUMNS), rebuilt as
 * notification-service emits it (same event id, occurredAt and correlation id), or why it cannot be.
 */
function envelopeOfRow(r: StoredNotificationRow): Pick<DueRow, 'payload' | 'unavailable'> {
  try {
    return { payload: notificationCreatedOf(storedNotificationOf(r)) as unknown as Record<string, unknown> };
  } catch (err) {
    return {
      payload: null,
      unavailable: `the contract refuses the notification.created of its row: ${(err as Error).message}`,
    };
  }
}

function queriesOf(kind: LostWorkKind, w: Window): Query[] {
  switch (kind) {
    case 'event':
      return INBOX_QUEUES.map((queue) =>
        statement(queue, (bind) =>
          sentEventsSql(bind, { ...w, routingKeys: routingKeysOf(queue) }, (o) => [
            notProcessedSql(bind, queue, o.eventId),
            notDead(o.eventId),
          ]),
        ),
      );
    case 'email':
    case 'digest':
      // notification.created has no outbox row: the notification row is its record (the event id
      // is the row id), emitted after its batch's commit or again at its source's redelivery.
      return [
        statement(
          EMAIL_QUEUE,
          (bind) =>
            createdNotificationsSql(bind, w, (n) => [
              ...undecidedNotificationSql(bind, n.payload, kind === 'email' ? 'immediate' : 'digest'),
              notDead(n.eventId),
            ]),
          (r) => {
            const row = r as unknown as StoredNotificationRow & { at: Date };
            return { id: row.id, at: row.at, ...envelopeOfRow(row) };
          },
        ),
      ];
    case 'email-lease':
      return [
        // The envelope is the notification.created of the key, rebuilt from its notification row,
        // which stays as long as the notification does.
        statement(
          EMAIL_QUEUE,
          (bind) =>
            `SELECT * FROM (${expiredLeasesSql(bind, w, (d) => ({
              join: createdNotificationLookupSql({ alias: 'nc', userId: d.userId, idempotencyKey: d.idempotencyKey }),
              select: 'nc.*',
            }))}) l`,
          (r) => {
            const row = r as unknown as Partial<StoredNotificationRow> & { key: string; at: Date };
            if (row.id === null || row.id === undefined)
              return {
                id: `key:${row.key}`,
                at: row.at,
                idempotencyKey: row.key,
                payload: null,
                unavailable:
                  'no notification row for this key any more (withdrawn, erased, or replaced under another key): nothing to announce; mark the ledger row failed',
              };
            return { id: row.id, at: row.at, idempotencyKey: row.key, ...envelopeOfRow(row as StoredNotificationRow) };
          },
        ),
      ];
    case 'fanout-chunk':
      return [
        statement(
          FANOUT_QUEUE,
          (bind) =>
            `SELECT c.post_id || '#' || c.chunk_no AS id, c.at, NULL::jsonb AS payload FROM (${pendingChunksSql(bind, w)}) c`,
        ),
      ];
  }
}

/** How long after its row each kind is due without its message (the `until` of the check's window). */
export interface DueAfter {
  /**
   * Outbox rows published, and notification rows created, longer ago than this: their message
   * reached its queue or was lost.
   */
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
      queriesOf(kind, windows(kind)).map(async (q) => {
        const { rows } = await pool.query<{ n: number; oldest: Date | null }>(
          `SELECT count(*)::int AS n, min(at) AS oldest FROM (${q.sql}) due`,
          q.params,
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
  for (const q of queriesOf(kind, w)) {
    const { rows } = await pool.query<Record<string, unknown>>(
      `SELECT * FROM (${q.sql}) due ORDER BY at, id LIMIT ${limit + 1}`,
      q.params,
    );
    for (const r of rows) {
      const row = q.rowOf
        ? q.rowOf(r)
        : {
            id: r.id as string,
            at: r.at as Date,
            payload: r.payload as Record<string, unknown> | null,
            ...(r.key !== undefined ? { idempotencyKey: r.key as string } : {}),
          };
      out.push({ kind, queue: q.queue, ...row });
    }
  }
  out.sort((a, b) => a.at.getTime() - b.at.getTime() || a.id.localeCompare(b.id));
  return { rows: out.slice(0, limit), more: out.length > limit };
}
