import type { PoolClient } from 'pg';
import { claimEvents } from '@community/idempotency';
import { retractionSubject } from '@community/contracts';
import { notifyInboxes } from './ingest';
import { withdrawSubject } from './retraction';

export interface ErasureCounts {
  /** The user's own notifications (their read state goes with them). */
  items: number;
  preferences: number;
  /** Other users' notifications whose actor was the erased user, now without actor and excerpt. */
  anonymised: number;
  /** Of those, withdrawn (an account deletion: cause `account_deleted`). */
  withdrawn: number;
}

/**
 * Erases a user's data from notification-service's tables, inside the caller's transaction, after
 * claiming the event in the inbox: null when the event was processed already (a redelivery: no
 * second effect).
 *
 * - Deleted: the user's notifications (with their read state), unread counter, preferences and
 *   display-name projection (notification_users).
 * - Anonymised, not deleted: OTHER users' notifications whose actor is the erased user ("X
 *   mentioned you"). They belong to their recipients' inboxes, so they stay, but lose what is the
 *   erased user's: the actor (actor_id NULL; its name came from notification_users, deleted above)
 *   and the excerpt (the erased user's own words). A client shows them as by "a deleted user".
 *   The recipients' inbox versions advance and their streams are told, so a syncing client sees the
 *   change like any other (store/inbox.ts: a row's state_version is its last change).
 * - Kept: idempotency and slot keys (`follow:{followerId}:{followeeId}`) may hold the erased
 *   user's id: an opaque id, which no longer leads to a name or an address once the projections
 *   are gone, and which keeps a redelivered old event from notifying anyone twice.
 *
 * - Withdrawn as well, when the erasure is the user's own account deletion (`accountDeleted`, from
 *   user.erased's cause `account_deleted`): the tombstone `user:{userId}` and the withdrawal of
 *   every notification that names it (store/retraction.ts), so others' inboxes, counts and pending
 *   emails lose what the deleted user caused, and a late event of theirs notifies nobody.
 *
 * Locks: the counter rows in user id order, like the consumers' batch (claimAndLockInboxes), so an
 * erasure and a batch wait for each other instead of deadlocking.
 */
export async function eraseUser(
  tx: PoolClient,
  consumer: string,
  eventId: string,
  userId: string,
  accountDeleted?: { correlationId: string },
): Promise<ErasureCounts | null> {
  if ((await claimEvents(tx, consumer, [eventId])).length === 0) return null;
  const withdrawn = accountDeleted
    ? (
        await withdrawSubject(tx, retractionSubject('user', userId), {
          type: 'user.erased',
          eventId,
          correlationId: accountDeleted.correlationId,
        })
      ).withdrawn.length
    : 0;

  const recipients = (
    await tx.query<{ user_id: string }>(
      `SELECT DISTINCT user_id FROM notification_items WHERE actor_id = $1 AND user_id <> $1`,
      [userId],
    )
  ).rows.map((r) => r.user_id);
  const locked = await tx.query<{ user_id: string; version: string }>(
    `INSERT INTO notification_counters AS c (user_id, version)
     SELECT u, 1 FROM unnest($1::text[]) AS t(u) ORDER BY u
     ON CONFLICT (user_id) DO UPDATE SET version = c.version + 1, updated_at = now()
     RETURNING c.user_id, c.version`,
    [[...recipients, userId].sort()],
  );
  const anonymised = await tx.query(
    `UPDATE notification_items n SET actor_id = NULL, excerpt = NULL, state_version = l.version
       FROM unnest($2::text[], $3::int8[]) AS l(user_id, version)
      WHERE n.user_id = l.user_id AND n.actor_id = $1 AND n.user_id <> $1`,
    [userId, locked.rows.map((r) => r.user_id), locked.rows.map((r) => r.version)],
  );
  const items = await tx.query(`DELETE FROM notification_items WHERE user_id = $1`, [userId]);
  const preferences = await tx.query(`DELETE FROM notification_preferences WHERE user_id = $1`, [userId]);
  await tx.query(`DELETE FROM notification_counters WHERE user_id = $1`, [userId]);
  await tx.query(`DELETE FROM notification_users WHERE user_id = $1`, [userId]);
  // Open streams: the recipients see the anonymised rows, the erased user's own stream an empty inbox.
  await notifyInboxes(tx, [...recipients, userId]);
  return {
    items: items.rowCount ?? 0,
    preferences: preferences.rowCount ?? 0,
    anonymised: anonymised.rowCount ?? 0,
    withdrawn,
  };
}
