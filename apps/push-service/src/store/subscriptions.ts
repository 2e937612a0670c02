import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import type { BrowserSubscription } from '../domain/subscription';

/**
 * `push_subscriptions`: one row per browser endpoint (unique). The endpoint belongs to the user
 * who registered it last: a browser shared after another login pushes the new user's
 * notifications, never the previous user's.
 */

export interface StoredSubscription {
  id: string;
  endpoint: string;
  createdAt: Date;
}

export type SubscribeResult =
  | { result: 'created'; subscription: StoredSubscription }
  | { result: 'exists'; subscription: StoredSubscription }
  | { result: 'limit'; count: number };

/** Pushes not sent yet to a subscription that goes (or moves to another user) are cancelled. */
async function cancelPending(tx: Pick<PoolClient, 'query'>, subscriptionIds: string[], reason: string): Promise<void> {
  if (subscriptionIds.length === 0) return;
  await tx.query(
    `UPDATE push_deliveries SET state = 'cancelled', last_error = $2, lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE subscription_id = ANY($1::bigint[]) AND state = 'pending'`,
    [subscriptionIds, reason],
  );
}

/**
 * Registers a browser for a user: created, or exists (the same endpoint again: its keys are
 * refreshed), or refused at the per-user limit. Serialised per user (advisory lock), so two
 * concurrent subscriptions cannot both pass the count.
 */
export async function subscribe(
  pool: Pool,
  userId: string,
  sub: BrowserSubscription,
  maxPerUser: number,
): Promise<SubscribeResult> {
  return withTransaction(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`push-subscriptions:${userId}`]);
    const existing = await tx.query<{ id: string; user_id: string }>(
      'SELECT id::text, user_id FROM push_subscriptions WHERE endpoint = $1 FOR UPDATE',
      [sub.endpoint],
    );
    const row = existing.rows[0];
    if (row?.user_id === userId) {
      const updated = await tx.query<{ id: string; endpoint: string; created_at: Date }>(
        `UPDATE push_subscriptions SET p256dh = $2, auth = $3, updated_at = now() WHERE id = $1
         RETURNING id::text, endpoint, created_at`,
        [row.id, sub.p256dh, sub.auth],
      );
      return { result: 'exists', subscription: toSubscription(updated.rows[0]) };
    }
    const { rows } = await tx.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM push_subscriptions WHERE user_id = $1',
      [userId],
    );
    if (rows[0].n >= maxPerUser) return { result: 'limit', count: rows[0].n };
    if (row) {
      // The browser changed hands: the previous user's pending pushes to it never go out.
      await cancelPending(tx, [row.id], 'subscription_moved');
      const moved = await tx.query<{ id: string; endpoint: string; created_at: Date }>(
        `UPDATE push_subscriptions SET user_id = $2, p256dh = $3, auth = $4, created_at = now(), updated_at = now()
          WHERE id = $1 RETURNING id::text, endpoint, created_at`,
        [row.id, userId, sub.p256dh, sub.auth],
      );
      return { result: 'created', subscription: toSubscription(moved.rows[0]) };
    }
    const inserted = await tx.query<{ id: string; endpoint: string; created_at: Date }>(
      `INSERT INTO push_subscriptions (user_id, endpoint, p256dh, auth) VALUES ($1, $2, $3, $4)
       RETURNING id::text, endpoint, created_at`,
      [userId, sub.endpoint, sub.p256dh, sub.auth],
    );
    return { result: 'created', subscription: toSubscription(inserted.rows[0]) };
  });
}

/** Removes the user's subscription of this endpoint (its pending pushes cancelled); false when there was none. */
export async function unsubscribe(pool: Pool, userId: string, endpoint: string): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      'SELECT id::text FROM push_subscriptions WHERE user_id = $1 AND endpoint = $2 FOR UPDATE',
      [userId, endpoint],
    );
    if (rows.length === 0) return false;
    await cancelPending(tx, [rows[0].id], 'unsubscribed');
    await tx.query('DELETE FROM push_subscriptions WHERE id = $1', [rows[0].id]);
    return true;
  });
}

/**
 * The push service said the subscription is gone (404, 410): remove it, its other pending pushes
 * cancelled. Inside the caller's transaction (the ledger row's `gone` commits with it).
 */
export async function removeGone(tx: Pick<PoolClient, 'query'>, subscriptionId: string): Promise<void> {
  await cancelPending(tx, [subscriptionId], 'subscription_gone');
  await tx.query('DELETE FROM push_subscriptions WHERE id = $1', [subscriptionId]);
}

/** Every subscription of a user (erasure), their pending pushes cancelled first. */
export async function removeAllOf(tx: Pick<PoolClient, 'query'>, userId: string): Promise<number> {
  const { rows } = await tx.query<{ id: string }>(
    'SELECT id::text FROM push_subscriptions WHERE user_id = $1 FOR UPDATE',
    [userId],
  );
  await cancelPending(
    tx,
    rows.map((r) => r.id),
    'user_erased',
  );
  const deleted = await tx.query('DELETE FROM push_subscriptions WHERE user_id = $1', [userId]);
  return deleted.rowCount ?? 0;
}

function toSubscription(r: { id: string; endpoint: string; created_at: Date }): StoredSubscription {
  return { id: r.id, endpoint: r.endpoint, createdAt: r.created_at };
}
