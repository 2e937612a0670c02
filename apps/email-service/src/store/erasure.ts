import type { PoolClient } from 'pg';
import { claimEvents } from '@community/idempotency';

/** The display name an erased user keeps in the projection: what other users' emails name them as. */
export const ERASED_DISPLAY_NAME = 'a deleted user';

export interface ErasureCounts {
  /** Ledger rows of the user, kept without their SMTP response and error text. */
  deliveries: number;
  /** Ledger rows still waiting (pending), suppressed so they are never sent. */
  suppressedPending: number;
  digestWindows: number;
  digestItems: number;
  /** Items in OTHER users' digests whose actor was the erased user, now without actor and excerpt. */
  anonymisedItems: number;
  suppressions: number;
}

/**
 * Erases a user's data from email-service's tables, inside the caller's transaction, after claiming
 * the event in the inbox: null when it was processed already (a redelivery: no second effect).
 *
 * - email_users: ANONYMISED, not deleted. The address and the name are removed (email '', which the
 *   senders already treat as "no address": recorded as failed, never sent; the name becomes
 *   ERASED_DISPLAY_NAME, which other users' emails show as the actor), and the row's version
 *   becomes the erasure's (occurredAt, event id). The row stays as a tombstone: a user.upserted of
 *   the user still in flight, older than the erasure, then changes nothing (store/users.ts: last
 *   write wins), instead of bringing the address back. A newer one (the user came back) wins.
 * - email_deliveries (the ledger): KEPT, with smtp_response and last_error set to NULL (they can
 *   quote the address). A row is what prevents sending the same notification twice (unique on
 *   idempotency key and channel) and says what was sent; it holds the user id and the key, no
 *   address and no content (the notification of a held email, `held`, is removed). A row still pending (held by the breaker, waiting for a retry or the
 *   digest scheduler) is suppressed, so it is never sent; a row being sent right now finishes.
 * - email_digest_windows and email_digest_items of the user: deleted (their deliveries keep their
 *   ledger rows; digest_window_id becomes NULL by its foreign key).
 * - Items in OTHER users' digests, and their held emails, whose actor is the erased user: without
 *   the actor and the excerpt.
 * - email_suppressions (the unsubscribe state): deleted; with no address nothing is sent anyway.
 */
export async function eraseUser(
  tx: PoolClient,
  consumer: string,
  event: { id: string; occurredAt: string },
  userId: string,
): Promise<ErasureCounts | null> {
  if ((await claimEvents(tx, consumer, [event.id])).length === 0) return null;

  await tx.query(
    `INSERT INTO email_users (user_id, email, display_name, locale, source_event_id, source_occurred_at, updated_at)
     VALUES ($1, '', $2, NULL, $3, $4, now())
     ON CONFLICT (user_id) DO UPDATE
       SET email = '', display_name = EXCLUDED.display_name, locale = NULL, updated_at = now(),
           source_event_id = EXCLUDED.source_event_id, source_occurred_at = EXCLUDED.source_occurred_at`,
    [userId, ERASED_DISPLAY_NAME, event.id, event.occurredAt],
  );
  const suppressedPending = await tx.query(
    `UPDATE email_deliveries SET state = 'suppressed', last_error = 'erased: the user was erased before this email was sent', updated_at = now()
      WHERE user_id = $1 AND state = 'pending'`,
    [userId],
  );
  const deliveries = await tx.query(
    `UPDATE email_deliveries SET smtp_response = NULL, held = NULL, last_error = CASE WHEN state = 'suppressed' AND last_error LIKE 'erased:%' THEN last_error END
      WHERE user_id = $1`,
    [userId],
  );
  const digestItems = await tx.query(`DELETE FROM email_digest_items WHERE user_id = $1`, [userId]);
  const digestWindows = await tx.query(`DELETE FROM email_digest_windows WHERE user_id = $1`, [userId]);
  const anonymisedItems = await tx.query(
    `UPDATE email_digest_items SET actor_id = NULL, excerpt = NULL WHERE actor_id = $1`,
    [userId],
  );
  // Held emails of OTHER users (delivery timing) about the erased user: no actor, no excerpt.
  await tx.query(
    `UPDATE email_deliveries SET held = held - 'actorId' - 'excerpt' WHERE held->>'actorId' = $1 AND state = 'pending'`,
    [userId],
  );
  const suppressions = await tx.query(`DELETE FROM email_suppressions WHERE user_id = $1`, [userId]);
  return {
    deliveries: deliveries.rowCount ?? 0,
    suppressedPending: suppressedPending.rowCount ?? 0,
    digestWindows: digestWindows.rowCount ?? 0,
    digestItems: digestItems.rowCount ?? 0,
    anonymisedItems: anonymisedItems.rowCount ?? 0,
    suppressions: suppressions.rowCount ?? 0,
  };
}
