import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import type { GroupSoFar, PushPayload } from '../domain/payload';
import type { Urgency } from '../domain/delivery';
import { removeGone } from './subscriptions';

/**
 * The delivery ledger (`push_deliveries`), one row per (idempotency key, subscription):
 *
 *   (decided) ─► pending ──claim──► sending ──201──► sent
 *                   ▲                  │ ├──404/410──► gone (the subscription is removed with it)
 *                   │                  │ └──413, other 4xx, attempts spent, TTL passed──► failed
 *                   └──429 / 5xx / no answer (next_attempt_at = Retry-After or backoff)──┘
 *   pending ──withdrawn, user erased, subscription removed──► cancelled
 *   sending ──read in the app before its held push was due (read_in_app)──► cancelled
 *   sending with an expired lease (its sender crashed) ──claim──► sending
 *
 * A row is created `pending`, due at once or at the end of its hold (quiet hours, delay-then-check),
 * in the transaction that decides the push (or directly `cancelled` when the notification was
 * withdrawn first); the consumer then claims and sends the
 * rows it created, and every replica's poll claims what is due (a retry, a crashed sender's row).
 * Claims are one statement with FOR UPDATE SKIP LOCKED: two claimers never get the same row. Every
 * later transition is conditional on the lease token, so only the holder moves a row; leases use
 * the database clock, the one every replica shares.
 */

export interface NewPush {
  idempotencyKey: string;
  userId: string;
  notificationId: string;
  notificationType: string;
  /** The inbox group, for a type that groups (domain/payload.ts groupOf); none: never grouped. */
  groupKey?: string;
  actorId?: string;
  topic: string;
  ttlSeconds: number;
  urgency: Urgency;
  /** The payload, given the group so far (this member included) when the push is a group's member. */
  payload: (group: GroupSoFar | undefined) => PushPayload;
  /** When the rows are first due: now, or the end of a hold (quiet hours, delay-then-check). */
  dueAt: Date;
}

export interface Decided {
  /** The user's subscriptions when it was decided. */
  subscriptions: number;
  /** Rows this call created pending (a duplicate delivery of the event creates none). */
  created: string[];
  /** The notification was withdrawn before: its rows were created cancelled. */
  withdrawn: boolean;
}

/**
 * One row per subscription of the user, for a notification to push. Serialised with the
 * withdrawal of the same key (an advisory lock on it), so a withdrawal either sees these rows (and
 * cancels them) or is seen here (and they are created cancelled): never a push after its
 * withdrawal committed.
 *
 * A group's member also takes the lock of the user's group (in a lock space of its own: two-key
 * advisory locks never meet the one-key ones), then counts the group so far from the ledger and
 * makes the payload from it: two members decided at once are counted one after the other, never
 * both without the other.
 */
export async function decide(tx: Pick<PoolClient, 'query'>, push: NewPush): Promise<Decided> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`push-key:${push.idempotencyKey}`]);
  const tomb = await tx.query('SELECT 1 FROM push_withdrawals WHERE idempotency_key = $1', [push.idempotencyKey]);
  const withdrawn = tomb.rows.length > 0;
  const group = push.groupKey && !withdrawn ? await groupSoFar(tx, push) : undefined;
  const { rows } = await tx.query<{ subscriptions: number; created: string[] }>(
    `WITH subs AS (SELECT id FROM push_subscriptions WHERE user_id = $2),
          ins AS (
            INSERT INTO push_deliveries (idempotency_key, subscription_id, user_id, notification_id, notification_type,
                                         state, topic, ttl_seconds, urgency, payload, next_attempt_at, expires_at, last_error,
                                         group_key, actor_id)
            SELECT $1, s.id, $2, $3, $4, $9::text::push_delivery_state, $5, $6::int, $7, $8::jsonb,
                   $10::timestamptz, $10::timestamptz + make_interval(secs => $6::int),
                   CASE WHEN $9::text = 'cancelled' THEN 'withdrawn' END, $11, $12
              FROM subs s
            ON CONFLICT (idempotency_key, subscription_id) DO NOTHING
            RETURNING id::text, state)
     SELECT (SELECT count(*)::int FROM subs) AS subscriptions,
            COALESCE((SELECT array_agg(id) FROM ins WHERE state = 'pending'), '{}') AS created`,
    [
      push.idempotencyKey,
      push.userId,
      push.notificationId,
      push.notificationType,
      push.topic,
      push.ttlSeconds,
      push.urgency,
      JSON.stringify(push.payload(group)),
      withdrawn ? 'cancelled' : 'pending',
      push.dueAt,
      push.groupKey ?? null,
      push.actorId ?? null,
    ],
  );
  return { subscriptions: rows[0].subscriptions, created: rows[0].created, withdrawn };
}

/**
 * The user's group so far, under the group's lock: the distinct idempotency keys of its ledger rows
 * (one row per key and subscription) whose notification was not withdrawn (no tombstone), with
 * this member's, and their distinct actors. A member whose push was not sent (read in the app,
 * failed, its subscription gone) is still a member of the inbox's group, and counts.
 */
async function groupSoFar(tx: Pick<PoolClient, 'query'>, push: NewPush): Promise<GroupSoFar> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('push-group'), hashtext($1))`, [
    JSON.stringify([push.userId, push.groupKey]),
  ]);
  const { rows } = await tx.query<GroupSoFar>(
    `SELECT count(DISTINCT m.k)::int AS members, count(DISTINCT m.a)::int AS actors
       FROM (SELECT d.idempotency_key AS k, d.actor_id AS a
               FROM push_deliveries d
              WHERE d.user_id = $1 AND d.group_key = $2
                AND NOT EXISTS (SELECT 1 FROM push_withdrawals w WHERE w.idempotency_key = d.idempotency_key)
             UNION ALL
             SELECT $3::text, $4::text) m`,
    [push.userId, push.groupKey, push.idempotencyKey, push.actorId ?? null],
  );
  return rows[0];
}

/** A claimed row, with what sending it needs. */
export interface Lease {
  id: string;
  idempotencyKey: string;
  userId: string;
  token: string;
  attempts: number;
  subscriptionId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  payload: PushPayload;
  ttlSeconds: number;
  urgency: Urgency;
  topic: string;
  expiresAt: Date;
  notificationType: string;
}

interface LeaseRow {
  id: string;
  idempotency_key: string;
  user_id: string;
  token: string;
  attempts: number;
  subscription_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  payload: PushPayload;
  ttl_seconds: number;
  urgency: Urgency;
  topic: string;
  expires_at: Date;
  notification_type: string;
}

const CLAIM = (which: string) => `
  WITH picked AS (
    SELECT d.id FROM push_deliveries d
     WHERE ${which}
       AND ((d.state = 'pending' AND d.next_attempt_at <= $4::timestamptz) OR (d.state = 'sending' AND d.lease_until < now()))
       AND d.subscription_id IS NOT NULL
     ORDER BY d.next_attempt_at, d.id
     LIMIT $3
     FOR UPDATE OF d SKIP LOCKED)
  UPDATE push_deliveries d
     SET state = 'sending', lease_token = $1::uuid, lease_until = now() + make_interval(secs => $2::float8 / 1000),
         attempts = d.attempts + 1, updated_at = now()
    FROM picked, push_subscriptions s
   WHERE d.id = picked.id AND s.id = d.subscription_id
  RETURNING d.id::text, d.idempotency_key, d.user_id, d.lease_token::text AS token, d.attempts, d.subscription_id::text, s.endpoint, s.p256dh, s.auth,
            d.payload, d.ttl_seconds, d.urgency, d.topic, d.expires_at, d.notification_type`;

const toLease = (r: LeaseRow): Lease => ({
  id: r.id,
  idempotencyKey: r.idempotency_key,
  userId: r.user_id,
  token: r.token,
  attempts: r.attempts,
  subscriptionId: r.subscription_id,
  endpoint: r.endpoint,
  p256dh: r.p256dh,
  auth: r.auth,
  payload: r.payload,
  ttlSeconds: r.ttl_seconds,
  urgency: r.urgency,
  topic: r.topic,
  expiresAt: r.expires_at,
  notificationType: r.notification_type,
});

/** Claims these rows (the ones a consumer just created), those still claimable and due by `now`. */
export async function claimRows(pool: Pool, ids: readonly string[], leaseMs: number, now: Date): Promise<Lease[]> {
  if (ids.length === 0) return [];
  const { rows } = await pool.query<LeaseRow>(CLAIM('d.id = ANY($5::bigint[])'), [
    randomUUID(),
    leaseMs,
    ids.length,
    now,
    ids,
  ]);
  return rows.map(toLease);
}

/**
 * Claims up to `limit` rows that are due by `now` (the service's clock, which set the due times):
 * held pushes whose hold ended, retries whose time has come; and rows of a crashed sender (by
 * the database clock, which leases use).
 */
export async function claimDue(pool: Pool, leaseMs: number, limit: number, now: Date): Promise<Lease[]> {
  const { rows } = await pool.query<LeaseRow>(CLAIM('true'), [randomUUID(), leaseMs, limit, now]);
  return rows.map(toLease);
}

const holds = 'id = $1 AND lease_token = $2::uuid AND state = $3';

export async function markSent(pool: Pool, lease: Lease, status: number): Promise<boolean> {
  const res = await pool.query(
    `UPDATE push_deliveries SET state = 'sent', sent_at = now(), last_status = $4, last_error = NULL,
            lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE ${holds}`,
    [lease.id, lease.token, 'sending', status],
  );
  return res.rowCount === 1;
}

export async function markFailed(pool: Pool, lease: Lease, status: number | null, reason: string): Promise<boolean> {
  const res = await pool.query(
    `UPDATE push_deliveries SET state = 'failed', last_status = $4, last_error = $5,
            lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE ${holds}`,
    [lease.id, lease.token, 'sending', status, reason],
  );
  return res.rowCount === 1;
}

/** Not pushed: read in the app before its held push was due (delay-then-check). Final: `cancelled`. */
export async function markReadInApp(pool: Pool, lease: Lease, reason: string): Promise<boolean> {
  const res = await pool.query(
    `UPDATE push_deliveries SET state = 'cancelled', last_error = $4, attempts = attempts - 1,
            lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE ${holds}`,
    [lease.id, lease.token, 'sending', reason],
  );
  return res.rowCount === 1;
}

/** Back to pending, due at `at` (Retry-After or the backoff). */
export async function reschedule(
  pool: Pool,
  lease: Lease,
  status: number | null,
  at: Date,
  reason: string,
): Promise<boolean> {
  const res = await pool.query(
    // A subscription removed meanwhile (unsubscribed, the user erased) leaves nothing to retry to.
    `UPDATE push_deliveries SET state = CASE WHEN subscription_id IS NULL THEN 'cancelled'::push_delivery_state ELSE 'pending' END,
            next_attempt_at = $5, last_status = $4, last_error = $6,
            lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE ${holds}`,
    [lease.id, lease.token, 'sending', status, at, reason],
  );
  return res.rowCount === 1;
}

/** 404/410: the row is `gone`, and the subscription removed (its other pending pushes cancelled). */
export async function markGone(pool: Pool, lease: Lease, status: number): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const res = await tx.query(
      `UPDATE push_deliveries SET state = 'gone', last_status = $4, last_error = 'subscription_gone',
              lease_token = NULL, lease_until = NULL, updated_at = now()
        WHERE ${holds}`,
      [lease.id, lease.token, 'sending', status],
    );
    if (res.rowCount !== 1) return false;
    await removeGone(tx, lease.subscriptionId);
    return true;
  });
}

/**
 * Retention: finished rows (sent, failed, gone, cancelled) older than `days`, at most `limit` per
 * call; pending and sending rows are never purged.
 */
export async function purgeFinished(pool: Pool, days: number, limit: number): Promise<number> {
  const res = await pool.query(
    `DELETE FROM push_deliveries WHERE id IN (
       SELECT id FROM push_deliveries
        WHERE created_at < now() - make_interval(days => $1) AND state IN ('sent', 'failed', 'gone', 'cancelled')
        ORDER BY created_at LIMIT $2)`,
    [days, limit],
  );
  return res.rowCount ?? 0;
}
