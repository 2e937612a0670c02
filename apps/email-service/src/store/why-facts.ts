import type { Pool } from 'pg';
import type { ProviderName } from '../smtp/provider-name';
import type { DeliveryChannel, DeliveryState } from './ledger';

// What this service holds about one user's emails, for a diagnosis: the reconciler's "why"
// (docs/RECONCILER.md) composes this read, exported from the public entry, with the other owners'.
// Read only.

export interface EmailFacts {
  /** The ledger rows of these notifications (one per idempotency key and channel). */
  deliveries: {
    idempotencyKey: string;
    channel: DeliveryChannel;
    state: DeliveryState;
    attempts: number;
    lastError: string | null;
    smtpResponse: string | null;
    sentAt: Date | null;
    /** The SMTP provider that accepted it (null: not sent, or sent before there were two). */
    provider: ProviderName | null;
    /** Bound to this provider: an attempt there may have delivered it, no other may send it. */
    pinnedProvider: ProviderName | null;
    /** A held email (quiet hours, delay-then-check: docs/EMAIL.md "Delivery timing"): due then. */
    heldUntil?: Date | null;
  }[];
  /** The digest items of these notifications, with their window's status and end. */
  digestItems: {
    idempotencyKey: string;
    windowStatus: 'open' | 'flushed' | 'empty';
    windowEnd: Date;
    windowId: string;
  }[];
  /** Whether the user's projection (their address) has arrived. */
  emailUser: boolean;
  /** The scopes the user opted out of. */
  suppressions: string[];
}

/** Everything the email tables say about the user's notifications with these idempotency keys. */
export async function emailFactsFor(
  pool: Pick<Pool, 'query'>,
  userId: string,
  idempotencyKeys: readonly string[],
): Promise<EmailFacts> {
  const [deliveries, digest, emailUser, suppressions] = await Promise.all([
    pool.query<{
      idempotency_key: string;
      channel: DeliveryChannel;
      state: DeliveryState;
      attempts: number;
      last_error: string | null;
      smtp_response: string | null;
      sent_at: Date | null;
      provider: ProviderName | null;
      pinned_provider: ProviderName | null;
      held_until: Date | null;
    }>(
      `SELECT d.idempotency_key, d.channel::text, d.state::text, d.attempts, d.last_error, d.smtp_response, d.sent_at,
              d.provider::text, d.pinned_provider::text,
              CASE WHEN d.held IS NOT NULL AND d.state = 'pending' THEN d.next_attempt_at END AS held_until
         FROM email_deliveries d
        WHERE d.idempotency_key = ANY($1::text[]) AND d.user_id = $2`,
      [idempotencyKeys, userId],
    ),
    pool.query<{
      idempotency_key: string;
      status: EmailFacts['digestItems'][number]['windowStatus'];
      window_end: Date;
      window_id: string;
    }>(
      `SELECT i.idempotency_key, w.status::text, w.window_end, w.id::text AS window_id FROM email_digest_items i JOIN email_digest_windows w ON w.id = i.window_id
        WHERE i.idempotency_key = ANY($1::text[]) AND i.user_id = $2 AND w.user_id = $2`,
      [idempotencyKeys, userId],
    ),
    pool.query('SELECT 1 FROM email_users WHERE user_id = $1', [userId]),
    pool.query<{ scope: string }>('SELECT scope FROM email_suppressions WHERE user_id = $1', [userId]),
  ]);
  return {
    deliveries: deliveries.rows.map((d) => ({
      idempotencyKey: d.idempotency_key,
      channel: d.channel,
      state: d.state,
      attempts: d.attempts,
      lastError: d.last_error,
      smtpResponse: d.smtp_response,
      sentAt: d.sent_at,
      provider: d.provider,
      pinnedProvider: d.pinned_provider,
      heldUntil: d.held_until,
    })),
    digestItems: digest.rows.map((d) => ({
      idempotencyKey: d.idempotency_key,
      windowStatus: d.status,
      windowEnd: d.window_end,
      windowId: d.window_id,
    })),
    emailUser: (emailUser.rowCount ?? 0) > 0,
    suppressions: suppressions.rows.map((s) => s.scope),
  };
}
