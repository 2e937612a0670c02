import type { PoolClient } from 'pg';
import { buildEvent, type NotificationType } from '@community/contracts';
import { claimEvents } from '@community/idempotency';
import { enqueueEvents } from '@community/outbox';
import { SERVICE_NAME } from '../config';
import { notifyInboxes } from './ingest';
import { RETRACTION_LOCK_KEY } from './retraction-lock';
import { applyItemDelta, refreshItems, unreadItemsOf } from './items';

export interface WithdrawnNotification {
  id: string;
  userId: string;
  type: NotificationType;
  idempotencyKey: string;
}

export interface RetractionResult {
  /** false: the subject had been retracted before (a second deletion event of the same thing). */
  tombstoned: boolean;
  withdrawn: WithdrawnNotification[];
}

/**
 * A retraction event (comment.deleted, post.deleted, reaction.removed), in the caller's transaction:
 * claims it in the inbox (null for a redelivery), then withdrawSubject.
 */
export async function retract(
  tx: PoolClient,
  consumer: string,
  source: { type: string; eventId: string; correlationId: string },
  subject: string,
): Promise<RetractionResult | null> {
  if ((await claimEvents(tx, consumer, [source.eventId])).length === 0) return null;
  return withdrawSubject(tx, subject, source);
}

/**
 * Records the tombstone of `subject` and withdraws every notification it names, in the caller's
 * transaction:
 *
 * 1. the exclusive retraction lock (so no batch is between its tombstone check and its commit);
 * 2. the tombstone (never purged): a creation arriving later is withdrawn on arrival;
 * 3. the recipients' counter rows locked in user-id order (the order of every inbox writer),
 *    their inbox versions advanced;
 * 4. the rows: `withdrawn_at` set, `in_app` cleared (so lists, counts and SSE skip them, like a
 *    hidden row), their state_version the new version; the counters lose the withdrawn rows that
 *    were counted (in-app and unread), so the counter invariant holds;
 * 5. notification.withdrawn of each row into the outbox (email-service drops a pending email or
 *    digest entry), and the SSE NOTIFY of the changed inboxes.
 */
export async function withdrawSubject(
  tx: PoolClient,
  subject: string,
  source: { type: string; eventId: string; correlationId: string },
): Promise<RetractionResult> {
  await tx.query(`SELECT pg_advisory_xact_lock($1::int8)`, [RETRACTION_LOCK_KEY.toString()]);
  const tombstone = await tx.query(
    `INSERT INTO notification_retractions (subject, source_type, source_event_id) VALUES ($1, $2, $3)
     ON CONFLICT (subject) DO NOTHING`,
    [subject, source.type, source.eventId],
  );
  const recipients = (
    await tx.query<{ user_id: string }>(
      `SELECT DISTINCT user_id FROM notification_items
        WHERE subjects && ARRAY[$1::text] AND withdrawn_at IS NULL ORDER BY user_id`,
      [subject],
    )
  ).rows.map((r) => r.user_id);
  if (recipients.length === 0) return { tombstoned: (tombstone.rowCount ?? 0) > 0, withdrawn: [] };

  // Two statements: a data-modifying CTE cannot update the counter rows the same statement locked
  // (PostgreSQL ignores a second update of a row within one command).
  const locked = await tx.query<{ user_id: string; version: string }>(
    `INSERT INTO notification_counters AS c (user_id, version)
     SELECT u, 1 FROM unnest($1::text[]) AS t(u) ORDER BY u
     ON CONFLICT (user_id) DO UPDATE SET version = c.version + 1, updated_at = now()
     RETURNING c.user_id, c.version`,
    [recipients],
  );
  const before = await unreadItemsOf(tx, recipients);
  const withdrawn = await tx.query<{
    id: string;
    user_id: string;
    type: NotificationType;
    idempotency_key: string;
    group_key: string | null;
  }>(
    `UPDATE notification_items n
        SET withdrawn_at = now(), in_app = false, item_head = false, state_version = l.version
       FROM unnest($2::text[], $3::int8[]) AS l(user_id, version)
      WHERE n.subjects && ARRAY[$1::text] AND n.withdrawn_at IS NULL AND n.user_id = l.user_id
     RETURNING n.id, n.user_id, n.type, n.idempotency_key, n.group_key`,
    [subject, locked.rows.map((r) => r.user_id), locked.rows.map((r) => r.version)],
  );
  // The groups they were in shrink (or vanish); each counter loses the unread items that went.
  await refreshItems(
    tx,
    withdrawn.rows.flatMap((r) => (r.group_key === null ? [] : [{ userId: r.user_id, groupKey: r.group_key }])),
  );
  await applyItemDelta(tx, before);
  withdrawn.rows.sort((a, b) => (a.user_id === b.user_id ? a.id.localeCompare(b.id) : a.user_id < b.user_id ? -1 : 1));
  const rows = withdrawn.rows.map((r) => ({
    id: r.id,
    userId: r.user_id,
    type: r.type,
    idempotencyKey: r.idempotency_key,
  }));
  await enqueueEvents(
    tx,
    SERVICE_NAME,
    rows.map((r) => ({
      // Aggregate = recipient, like notification.created: the relay publishes it after the
      // notification.created it withdraws.
      aggregateId: r.userId,
      event: buildEvent(
        'notification.withdrawn',
        { notificationId: r.id, userId: r.userId, type: r.type, idempotencyKey: r.idempotencyKey, subject },
        { producer: SERVICE_NAME, correlationId: source.correlationId },
      ),
    })),
  );
  await notifyInboxes(tx, recipients);
  return { tombstoned: (tombstone.rowCount ?? 0) > 0, withdrawn: rows };
}
