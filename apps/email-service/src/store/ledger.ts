import { randomUUID } from 'node:crypto';
import type { Pool, QueryResultRow } from 'pg';
import type { ProviderName } from '../smtp/provider-name';
import { holderAlive } from './instances';

/**
 * The delivery ledger (`email_deliveries`), one row per (idempotency key, channel):
 *
 *   (decided) ─► pending ──claim──► sending ──250──► sent
 *                   ▲                  │ └──5xx──► failed    (re-attemptable only by a new delivery
 *                   └──4xx / outage────┘                      of the message: nothing was sent)
 *   pending | failed ──opt-out──► suppressed
 *   sending with an expired lease (its sender crashed) ──claim──► sending (same Message-ID)
 *   sending whose holder stopped its heartbeat (crashed) ──claim──► sending (same Message-ID, at once)
 *
 * An immediate email's first claim creates its row in `sending` directly (decided and claimed in
 * one statement, one commit less per email); `pending` is where a row waits between attempts (a
 * retry tier, a breaker hold) and where a digest waits for the scheduler.
 *
 * Every transition is one conditional UPDATE, so two replicas racing for the same row cannot both
 * win: the loser's UPDATE re-checks its WHERE clause after the winner commits and matches nothing.
 * Leases are compared with the database clock (now()), the one clock every replica shares.
 *
 * Providers (docs/EMAIL.md "Two providers"): the claim that starts an attempt writes its provider
 * (`attempt_provider`) before any SMTP command; `pinned_provider` is set once an attempt there may
 * have delivered the email (no reply to a whole message, or a takeover of a crashed sender's row),
 * and from then on every claim binds the attempt to it, whatever the caller prefers. `provider` is
 * written by the UPDATE that marks the row sent.
 */

export type DeliveryChannel = 'immediate' | 'digest';
export type DeliveryState = 'pending' | 'sending' | 'sent' | 'failed' | 'suppressed';

export interface NewDelivery {
  idempotencyKey: string;
  channel: DeliveryChannel;
  userId: string;
  messageId: string;
  notificationType?: string;
  notificationId?: string;
}

/** A claimed row: only the holder of `token` may move it out of `sending`. */
export interface Lease {
  id: string;
  token: string;
  attempts: number;
  messageId: string;
  /**
   * The provider this attempt goes to (attempt_provider), chosen by the claim: every lease the
   * ledger returns names it (absent only in a lease made by hand, in the state machine's specs).
   */
  provider?: ProviderName;
  /** Set when an earlier attempt there may have delivered it: no other provider may send it. */
  pinned?: ProviderName | null;
}

export interface DigestLease extends Lease {
  idempotencyKey: string;
  userId: string;
  digestWindowId: string | null;
}

/**
 * Who claims: this process's id in email_service_instances (store/instances.ts). A lease whose
 * holder is dead is taken over at once instead of waiting for lease_until (docs/EMAIL.md "A dead
 * holder's lease").
 */
export interface LeaseHolder {
  id: string;
  /**
   * The providers this claimer can send through now (breaker closed). A digest claim leaves a row
   * bound to another provider for a claimer that can send it (claimDueDigests); absent: any row.
   */
  usable?: () => readonly ProviderName[];
  /** Where this claimer sends a row not bound to a provider; absent: the primary. */
  preferred?: () => ProviderName | undefined;
}

/** Why a claim took the row from another sender. */
export type Takeover = 'lease_expired' | 'holder_dead';

export type ClaimResult =
  | { claimed: true; lease: Lease; takeover?: Takeover | null }
  | { claimed: false; state: DeliveryState | undefined; msUntilLeaseExpiry: number };

const LEASE_COLUMNS = `id::text AS id, lease_token::text AS token, attempts, message_id AS "messageId", attempt_provider::text AS provider, pinned_provider::text AS pinned`;

/**
 * The lease of the row `t` may be taken: it expired, or its holder is known and stopped beating
 * (no heartbeat within the dead_after_ms it declared, or its row is gone: a clean stop deletes it).
 * A NULL holder (a process from before lease holders) is only ever waited out; so does a claimer
 * without a holder id (`claimer` is a parameter reference to it).
 */
const takeable = (t: string, claimer: string) =>
  `(${t}.state = 'sending' AND (${t}.lease_until < now() OR (${claimer}::uuid IS NOT NULL AND ${t}.lease_holder IS NOT NULL AND NOT ${holderAlive(`${t}.lease_holder`)})))`;
/** The takeover column's value for a row about to be claimed (its old values). */
const takeoverOf = (t: string) =>
  `CASE WHEN ${t}.state <> 'sending' THEN NULL WHEN ${t}.lease_until < now() THEN 'lease_expired' ELSE 'holder_dead' END`;
/**
 * The provider binding of a row about to be claimed (its old values; `preferred` a parameter
 * reference). A row taken over from a sender that died mid-send is bound to the provider of that
 * attempt, which may have delivered it (a row claimed by a process from before providers: the
 * primary, SMTP_URL, the one provider then). Otherwise a row keeps its binding, if any.
 */
const pinOf = (t: string) =>
  `CASE WHEN ${t}.state = 'sending' THEN COALESCE(${t}.attempt_provider, 'primary') ELSE ${t}.pinned_provider END`;
/** The provider of the attempt a claim starts: the row's binding, else the claimer's preference. */
const attemptProviderOf = (t: string, preferred: string) => `COALESCE(${pinOf(t)}, ${preferred}::email_provider)`;

/** Records a decision waiting to be sent (pending), e.g. while the breaker holds it. No-op if the row exists. */
export async function record(pool: Pool, d: NewDelivery): Promise<void> {
  await pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, notification_type, notification_id)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (idempotency_key, channel) DO NOTHING`,
    [d.idempotencyKey, d.channel, d.userId, d.messageId, d.notificationType ?? null, d.notificationId ?? null],
  );
}

/**
 * Creates the row in `sending`, or moves pending | failed | sending-with-a-takeable-lease (expired,
 * or its holder dead) to `sending`, under a new lease held by `holder`; one statement, so two
 * deliveries of the same key racing here cannot both win (the loser waits on the row lock, then
 * its WHERE no longer matches). The same statement binds the attempt to its provider, before any
 * SMTP command: the row's binding if it has one (an earlier attempt there may have delivered it;
 * a takeover binds to the dead sender's provider), else `provider`, the caller's preference.
 */
export async function claim(
  pool: Pool,
  d: NewDelivery,
  leaseMs: number,
  holder?: LeaseHolder,
  provider: ProviderName = 'primary',
): Promise<ClaimResult> {
  const res = await pool.query<Lease & { takeover: Takeover | null }>(
    `INSERT INTO email_deliveries
       (idempotency_key, channel, user_id, message_id, notification_type, notification_id, state, attempts, lease_token, lease_until, lease_holder, attempt_provider)
     VALUES ($1, $2, $3, $4, $5, $6, 'sending', 1, $7, now() + $8::float8 * interval '1 millisecond', $9::uuid, $10::email_provider)
     ON CONFLICT (idempotency_key, channel) DO UPDATE
       SET state = 'sending', attempts = email_deliveries.attempts + 1, lease_token = EXCLUDED.lease_token,
           lease_until = EXCLUDED.lease_until, lease_holder = EXCLUDED.lease_holder,
           takeover = ${takeoverOf('email_deliveries')},
           attempt_provider = ${attemptProviderOf('email_deliveries', '$10')},
           pinned_provider = ${pinOf('email_deliveries')}, updated_at = now()
     WHERE email_deliveries.state IN ('pending', 'failed') OR ${takeable('email_deliveries', '$9')}
     RETURNING ${LEASE_COLUMNS}, takeover`,
    [
      d.idempotencyKey,
      d.channel,
      d.userId,
      d.messageId,
      d.notificationType ?? null,
      d.notificationId ?? null,
      randomUUID(),
      leaseMs,
      holder?.id ?? null,
      provider,
    ],
  );
  const won = res.rows[0];
  if (won) {
    const { takeover, ...lease } = won;
    return { claimed: true, lease, takeover: takeover ?? null };
  }
  const current = await pool.query<{ state: DeliveryState; ms: number | null }>(
    `SELECT state, GREATEST(0, EXTRACT(EPOCH FROM (lease_until - now())) * 1000)::float8 AS ms
       FROM email_deliveries WHERE idempotency_key = $1 AND channel = $2`,
    [d.idempotencyKey, d.channel],
  );
  const row = current.rows[0];
  return { claimed: false, state: row?.state, msUntilLeaseExpiry: row?.ms ?? 0 };
}

/**
 * Claims digest deliveries that are due (pending and next_attempt_at reached, or sending with a
 * takeable lease: expired, or its holder dead). SKIP LOCKED: concurrent schedulers take disjoint
 * rows instead of waiting. Each attempt is bound to its provider as in `claim` (the holder's
 * preference for a row not bound yet); a row bound to a provider the holder cannot send through
 * now (`holder.usable`) is left where it is, due, for the next tick, instead of being claimed and
 * given back.
 */
export async function claimDueDigests(
  pool: Pool,
  now: Date,
  limit: number,
  leaseMs: number,
  holder?: LeaseHolder,
): Promise<DigestLease[]> {
  return claimDue<DigestLease>(
    pool,
    {
      rows: `channel = 'digest'`,
      order: 'next_attempt_at',
      returning: `d.digest_window_id::text AS "digestWindowId"`,
    },
    now,
    limit,
    leaseMs,
    holder,
  );
}

/**
 * sending → sent, with the provider that accepted it, in one write. False when the lease was lost
 * (taken over after expiry): see docs/EMAIL.md.
 */
export async function markSent(pool: Pool, lease: Lease, smtpResponse: string): Promise<boolean> {
  const res = await pool.query(
    `UPDATE email_deliveries
        SET state = 'sent', sent_at = now(), smtp_response = $3, last_error = NULL, provider = $4::email_provider,
            lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token, smtpResponse.slice(0, 1000), lease.provider ?? 'primary'],
  );
  return res.rowCount === 1;
}

/**
 * Binds the row to the provider of the attempt under `lease`, for good: that attempt handed the
 * whole message over and got no reply, so the provider may have accepted it, and no other provider
 * may ever send it. Written while the lease is still held (before any release), so no later claim
 * can see the row unbound. False when the lease was lost meanwhile (the taker bound it already:
 * a takeover binds to the provider of the attempt it takes over).
 */
export async function bindToAttemptProvider(pool: Pool, lease: Lease): Promise<boolean> {
  const res = await pool.query(
    `UPDATE email_deliveries SET pinned_provider = attempt_provider, updated_at = now()
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token],
  );
  return res.rowCount === 1;
}

/**
 * sending → pending after a transient failure. `nextAttemptAt` schedules a digest's next try;
 * `refundAttempt` undoes the claim's attempt count when nothing was tried (breaker opened). The
 * provider binding, if any, stays.
 */
export async function release(
  pool: Pool,
  lease: Lease,
  error: string,
  options: { nextAttemptAt?: Date; refundAttempt?: boolean } = {},
): Promise<void> {
  await pool.query(
    `UPDATE email_deliveries
        SET state = 'pending', last_error = $3, next_attempt_at = COALESCE($4::timestamptz, next_attempt_at),
            attempts = attempts - $5::int, lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token, error.slice(0, 1000), options.nextAttemptAt ?? null, options.refundAttempt ? 1 : 0],
  );
}

/** sending → failed (5xx, or a digest out of attempts), with the reason. */
export function markFailed(pool: Pool, lease: Lease, reason: string): Promise<void> {
  return finishWithout(pool, lease, 'failed', reason);
}

/** sending → suppressed: the user opted out after the email was decided. */
export function markSuppressed(pool: Pool, lease: Lease, reason: string): Promise<void> {
  return finishWithout(pool, lease, 'suppressed', reason);
}

/** Ends a lease without a send: the final state and its reason, only while the lease is still ours. */
async function finishWithout(pool: Pool, lease: Lease, state: 'failed' | 'suppressed', reason: string): Promise<void> {
  await pool.query(
    `UPDATE email_deliveries
        SET state = $3, last_error = $4, lease_token = NULL, lease_until = NULL, updated_at = now()
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token, state, reason.slice(0, 1000)],
  );
}

/**
 * Records an email that cannot be sent without trying (no address): a failed row with the reason,
 * created or updated from pending/failed. A row already sent or in flight is left alone.
 */
export async function recordUndeliverable(pool: Pool, d: NewDelivery, reason: string): Promise<void> {
  await pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, notification_type, notification_id, state, last_error)
     VALUES ($1, $2, $3, $4, $5, $6, 'failed', $7)
     ON CONFLICT (idempotency_key, channel) DO UPDATE
       SET state = 'failed', last_error = EXCLUDED.last_error, updated_at = now()
     WHERE email_deliveries.state IN ('pending', 'failed')`,
    [d.idempotencyKey, d.channel, d.userId, d.messageId, d.notificationType ?? null, d.notificationId ?? null, reason],
  );
}

/** (none) | pending | failed → suppressed: an opt-out seen before sending. */
export async function recordSuppressed(pool: Pool, d: NewDelivery, reason: string): Promise<void> {
  await pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, notification_type, notification_id, state, last_error)
     VALUES ($1, $2, $3, $4, $5, $6, 'suppressed', $7)
     ON CONFLICT (idempotency_key, channel) DO UPDATE
       SET state = 'suppressed', last_error = EXCLUDED.last_error, updated_at = now()
     WHERE email_deliveries.state IN ('pending', 'failed')`,
    [d.idempotencyKey, d.channel, d.userId, d.messageId, d.notificationType ?? null, d.notificationId ?? null, reason],
  );
}

/**
 * A held immediate email (docs/EMAIL.md "Delivery timing"): what it is composed from when it is
 * due. Only ids and the excerpt; names and the address are read from the projection then.
 */
export interface HeldNotification {
  type: string;
  notificationId: string;
  actorId?: string;
  resourceType: string;
  excerpt?: string;
  /** notification-service's decision time (the event's occurredAt), compared with opt-outs. */
  decidedAt: string;
}

/**
 * Holds an immediate email in the ledger until `notBefore`: a `pending` row with next_attempt_at
 * and the notification to compose it from; the ticker sends it then (`claimDueHeld`). A copy of
 * the same notification changes nothing (the first arrival's time stands), except on a row that a
 * new delivery may re-attempt: `failed`, or `pending` left by an attempt of the broker's (no hold
 * yet), which become held. Returns false when nothing changed (a duplicate).
 */
export async function recordHeld(
  pool: Pool,
  d: NewDelivery,
  notBefore: Date,
  held: HeldNotification,
): Promise<boolean> {
  const res = await pool.query(
    `INSERT INTO email_deliveries
       (idempotency_key, channel, user_id, message_id, notification_type, notification_id, state, next_attempt_at, held)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8::jsonb)
     ON CONFLICT (idempotency_key, channel) DO UPDATE
       SET state = 'pending', held = EXCLUDED.held, updated_at = now(),
           next_attempt_at = CASE WHEN email_deliveries.state = 'failed' THEN EXCLUDED.next_attempt_at
                                  ELSE COALESCE(email_deliveries.next_attempt_at, EXCLUDED.next_attempt_at) END
     WHERE email_deliveries.state = 'failed' OR (email_deliveries.state = 'pending' AND email_deliveries.held IS NULL)`,
    [
      d.idempotencyKey,
      d.channel,
      d.userId,
      d.messageId,
      d.notificationType ?? null,
      d.notificationId ?? null,
      notBefore,
      JSON.stringify(held),
    ],
  );
  return res.rowCount === 1;
}

export interface HeldLease extends Lease {
  idempotencyKey: string;
  userId: string;
  held: HeldNotification;
}

/**
 * Claims held immediate emails that are due (pending with next_attempt_at reached, or sending with
 * a takeable lease: the ticker that had it died), as `claimDueDigests` does for digests: SKIP
 * LOCKED, each attempt bound to its provider, rows bound to a provider that cannot send now left
 * for the next tick. Ordered by user, so one read-state call asks about a user's keys together.
 */
export async function claimDueHeld(
  pool: Pool,
  now: Date,
  limit: number,
  leaseMs: number,
  holder?: LeaseHolder,
): Promise<HeldLease[]> {
  return claimDue<HeldLease>(
    pool,
    {
      rows: `channel = 'immediate' AND held IS NOT NULL`,
      order: 'user_id, next_attempt_at',
      returning: 'd.held',
    },
    now,
    limit,
    leaseMs,
    holder,
  );
}

/**
 * The claim of the rows the ticker sends (digests, held immediate emails): due rows of `rows`
 * (pending and next_attempt_at reached, or sending with a takeable lease: expired, or its holder
 * dead), SKIP LOCKED so that concurrent tickers take disjoint rows, each attempt bound to its
 * provider as in `claim`, rows bound to a provider the holder cannot send through now left due.
 */
async function claimDue<T>(
  pool: Pool,
  which: { rows: string; order: string; returning: string },
  now: Date,
  limit: number,
  leaseMs: number,
  holder?: LeaseHolder,
): Promise<T[]> {
  const usable = holder?.usable?.() ?? null;
  const res = await pool.query<T & QueryResultRow>(
    `UPDATE email_deliveries d
        SET state = 'sending', attempts = d.attempts + 1, lease_token = gen_random_uuid(),
            lease_until = now() + $3::float8 * interval '1 millisecond', lease_holder = $4::uuid,
            takeover = ${takeoverOf('c')}, attempt_provider = ${attemptProviderOf('c', '$5')},
            pinned_provider = ${pinOf('c')}, updated_at = now()
       FROM (
        SELECT id, state, lease_until, attempt_provider, pinned_provider FROM email_deliveries e
         WHERE ${which.rows}
           AND ((state = 'pending' AND next_attempt_at <= $1) OR ${takeable('e', '$4')})
           AND ($6::email_provider[] IS NULL OR ${pinOf('e')} IS NULL OR ${pinOf('e')} = ANY($6::email_provider[]))
         ORDER BY ${which.order}
         LIMIT $2
         FOR UPDATE SKIP LOCKED) c
      WHERE d.id = c.id
      RETURNING d.id::text AS id, d.lease_token::text AS token, d.attempts, d.message_id AS "messageId",
                d.attempt_provider::text AS provider, d.pinned_provider::text AS pinned,
                d.idempotency_key AS "idempotencyKey", d.user_id AS "userId", ${which.returning}`,
    [now, limit, leaseMs, holder?.id ?? null, holder?.preferred?.() ?? 'primary', usable],
  );
  return res.rows;
}
