import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import type { NotificationType } from '@community/contracts';
import { TransientError } from '@community/messaging';
import { digestKey, nextWindow, windowFor, type DigestPeriod } from '../domain/digest-window';
import { ITEM_BLOCKED_SQL } from './suppressions';
import { timeZoneOf } from './users';
import { ITEM_WITHDRAWN_SQL } from './withdrawals';

export interface DigestItemInput {
  idempotencyKey: string;
  userId: string;
  notificationId: string;
  notificationType: NotificationType;
  actorId?: string;
  resourceType: string;
  resourceId: string;
  excerpt?: string;
  /** notification.created's groupKey: items of one group are one digest line. */
  groupKey?: string;
  /** When notification-service decided (the event's occurredAt). */
  occurredAt: Date;
}

export interface DigestItemRow {
  notificationId: string;
  notificationType: NotificationType;
  actorId: string | null;
  resourceType: string;
  excerpt: string | null;
  groupKey: string | null;
}

export interface FlushResult {
  flushed: number;
  empty: number;
}

/**
 * Adds a notification to its user's open window (created on first use). The window row is
 * locked by the upsert, so an item is never added to a window a flusher is closing: the flusher
 * holds the same lock while it reads the items, and once it commits the window is no longer
 * open and the item goes to the next window. The item's key makes a redelivery a no-op.
 */
export async function addItem(
  pool: Pool,
  item: DigestItemInput,
  period: DigestPeriod,
  now: Date,
  digestHour = 0,
): Promise<'added' | 'duplicate'> {
  return withTransaction(pool, async (tx) => {
    // A daily window is the user's local day from the digest hour (domain/digest-window.ts).
    const local = { timeZone: await timeZoneOf(tx, item.userId), hour: digestHour };
    // The user's open window that contains now, if any: after a change of time zone (or of
    // DIGEST_LOCAL_HOUR) the current window keeps collecting until its end, instead of a second,
    // overlapping one starting; the next window follows the new setting.
    const current = await tx.query<{ id: string }>(
      `SELECT id::text AS id FROM email_digest_windows
        WHERE user_id = $1 AND status = 'open' AND window_start <= $2 AND window_end > $2
        ORDER BY window_start LIMIT 1 FOR UPDATE`,
      [item.userId, now],
    );
    if (current.rows[0]) return insertItem(tx, item, current.rows[0].id);
    let { start, end } = windowFor(now, period, local);
    for (let hops = 0; ; hops++) {
      const w = await tx.query<{ id: string; status: string }>(
        `INSERT INTO email_digest_windows (user_id, window_start, window_end) VALUES ($1, $2, $3)
         ON CONFLICT (user_id, window_start) DO UPDATE SET window_end = email_digest_windows.window_end
         RETURNING id::text AS id, status`,
        [item.userId, start, end],
      );
      if (w.rows[0].status === 'open') return insertItem(tx, item, w.rows[0].id);
      // Only a clock far behind the other replicas' could see several closed windows ahead.
      if (hops >= 2)
        throw new TransientError(
          `digest windows of user ${item.userId} up to ${end.toISOString()} are already closed`,
          'DIGEST_CLOCK',
        );
      ({ start, end } = nextWindow(end, period, local));
    }
  });
}

async function insertItem(tx: PoolClient, item: DigestItemInput, windowId: string): Promise<'added' | 'duplicate'> {
  const res = await tx.query(
    `INSERT INTO email_digest_items
       (idempotency_key, window_id, user_id, notification_id, notification_type, actor_id, resource_type, resource_id, excerpt, occurred_at, group_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (idempotency_key) DO NOTHING`,
    [
      item.idempotencyKey,
      windowId,
      item.userId,
      item.notificationId,
      item.notificationType,
      item.actorId ?? null,
      item.resourceType,
      item.resourceId,
      item.excerpt ?? null,
      item.occurredAt,
      item.groupKey ?? null,
    ],
  );
  return res.rowCount === 1 ? 'added' : 'duplicate';
}

/**
 * Closes due windows (window_end <= now), at most `limit` per call, in one transaction:
 * FOR UPDATE SKIP LOCKED hands each window to exactly one flusher even with several replicas
 * racing, and the status change commits together with the digest's ledger row (unique key
 * `digest:{user}:{window}` as a second guard). A window with nothing left to send (every item
 * suppressed) becomes `empty` and sends nothing.
 */
export async function flushDue(
  pool: Pool,
  now: Date,
  limit: number,
  messageIdFor: (key: string) => string,
): Promise<FlushResult> {
  return withTransaction(pool, async (tx) => {
    const due = await tx.query<{ id: string; userId: string; windowStart: Date }>(
      `SELECT id::text AS id, user_id AS "userId", window_start AS "windowStart"
         FROM email_digest_windows
        WHERE status = 'open' AND window_end <= $1
        ORDER BY window_end
        LIMIT $2
        FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
    const result: FlushResult = { flushed: 0, empty: 0 };
    for (const w of due.rows) {
      const live = await tx.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM email_digest_items i
          WHERE i.window_id = $1 AND NOT ${ITEM_BLOCKED_SQL} AND NOT ${ITEM_WITHDRAWN_SQL}`,
        [w.id],
      );
      if (live.rows[0].n === 0) {
        await tx.query(`UPDATE email_digest_windows SET status = 'empty', flushed_at = $2 WHERE id = $1`, [w.id, now]);
        result.empty += 1;
        continue;
      }
      const key = digestKey(w.userId, w.windowStart);
      await tx.query(
        `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, digest_window_id, next_attempt_at)
         VALUES ($1, 'digest', $2, $3, $4, $5) ON CONFLICT (idempotency_key, channel) DO NOTHING`,
        [key, w.userId, messageIdFor(key), w.id, now],
      );
      await tx.query(`UPDATE email_digest_windows SET status = 'flushed', flushed_at = $2 WHERE id = $1`, [w.id, now]);
      result.flushed += 1;
    }
    return result;
  });
}

/** The items of a window still to be sent (suppressed and withdrawn ones left out), oldest first. */
export async function liveItems(pool: Pool, windowId: string): Promise<DigestItemRow[]> {
  const res = await pool.query<DigestItemRow>(
    `SELECT notification_id AS "notificationId", notification_type AS "notificationType", actor_id AS "actorId",
            resource_type AS "resourceType", excerpt, group_key AS "groupKey"
       FROM email_digest_items i
      WHERE i.window_id = $1 AND NOT ${ITEM_BLOCKED_SQL} AND NOT ${ITEM_WITHDRAWN_SQL}
      ORDER BY i.occurred_at, i.idempotency_key`,
    [windowId],
  );
  return res.rows;
}
