import type { Pool } from 'pg';
import { PREFERENCE_LOCKED_TYPES, type EmailChannel } from '@community/contracts';

/**
 * What the reconciler's lost-work and stuck-work checks read from this service's tables
 * (docs/RECONCILER.md "Lost work", "Stuck work"): exported from the public entry, so the SQL that
 * names the email tables stays here. Read-only.
 */

/** Binds a value as a parameter of the statement being built and returns its placeholder (`$n`). */
export type BindParam = (value: unknown) => string;

/**
 * "This service never decided this notification.created" as predicates over its envelope (`payload`,
 * a jsonb SQL expression), for the published events whose `channel` is the one this service would
 * take (domain/channel.ts: a locked type is always immediate): no ledger row and no digest item for
 * its idempotency key. A digest item the user opted out of is not collected (no row either): such
 * users are left out (a false negative for them, never a false alarm).
 */
export function undecidedNotificationSql(bind: BindParam, payload: string, channel: EmailChannel): string[] {
  const data = `${payload}->'data'`;
  const decided = `(CASE WHEN ${data}->>'type' = ANY(${bind([...PREFERENCE_LOCKED_TYPES])}::text[]) THEN 'immediate' ELSE ${data}->>'emailChannel' END)`;
  return [
    `${decided} = ${bind(channel)}`,
    `NOT EXISTS (SELECT 1 FROM email_deliveries d WHERE d.idempotency_key = ${data}->>'idempotencyKey' AND d.channel = 'immediate')`,
    `NOT EXISTS (SELECT 1 FROM email_digest_items i WHERE i.idempotency_key = ${data}->>'idempotencyKey')`,
    ...(channel === 'digest'
      ? [
          `NOT EXISTS (SELECT 1 FROM email_suppressions s WHERE s.user_id = ${data}->>'userId' AND s.scope IN ('digest', ${data}->>'type'))`,
        ]
      : []),
  ];
}

/** The SQL expressions of one ledger row, for a join the caller adds to `expiredLeasesSql`. */
export interface LeaseRowRef {
  userId: string;
  idempotencyKey: string;
}

/**
 * A SELECT of the immediate ledger rows left `sending` whose lease expired in [since, until) (held
 * emails aside: the ticker, not a message, takes those over): the
 * message that drives each (and would take the lease over) is gone. Columns `key` (the idempotency
 * key), `at` (lease_until) and the caller's `select` columns over its `join` (the envelope of the
 * key, which this service does not keep).
 */
export function expiredLeasesSql(
  bind: BindParam,
  w: { since: Date; until: Date },
  lookup: (row: LeaseRowRef) => { join: string; select: string },
): string {
  const l = lookup({ userId: 'd.user_id', idempotencyKey: 'd.idempotency_key' });
  return `SELECT d.idempotency_key AS key, d.lease_until AS at, ${l.select} FROM email_deliveries d ${l.join}
           WHERE d.channel = 'immediate' AND d.held IS NULL AND d.state = 'sending' AND d.lease_until >= ${bind(w.since)} AND d.lease_until < ${bind(w.until)}`;
}

/** Deliveries left `sending` whose lease expired longer than `graceMs` ago without a takeover. */
export async function countExpiredLeases(pool: Pool, o: { graceMs: number }): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM email_deliveries WHERE state = 'sending' AND lease_until < now() - $1::float8 * interval '1 millisecond'`,
    [o.graceMs],
  );
  return rows[0].n;
}
