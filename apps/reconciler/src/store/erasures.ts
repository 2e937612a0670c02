import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { buildEvent } from '@community/contracts';
import { withTransaction } from '@community/db';
import { processedAtBy } from '@community/idempotency';
import { enqueueEvents, outboxSentAt } from '@community/outbox';

/** One row of user_erasures, the audit of erasures (docs/RUNBOOK.md "Erasure"). */
export interface Erasure {
  erasureId: string;
  userId: string;
  requestedBy: string;
  eventId: string;
  requestedAt: string;
}

export interface ErasureRequest {
  /** The request's identity (Idempotency-Key, or a fresh uuid without one). */
  requestKey: string;
  userId: string;
  /** The verified operator. */
  requestedBy: string;
  /** The outbox producer (the reconciler's SERVICE_NAME). */
  producer: string;
  /**
   * `account_deleted`: the user's own user.deleted (handlers/account-deleted.ts), carried on
   * user.erased so the consumers also withdraw what the user caused for others. Default: operator.
   */
  cause?: 'operator' | 'account_deleted';
}

export type ErasureResult =
  | { kind: 'created'; erasure: Erasure }
  | { kind: 'replayed'; erasure: Erasure }
  | { kind: 'key-reused'; erasure: Erasure };

interface Row {
  id: string;
  user_id: string;
  requested_by: string;
  event_id: string;
  requested_at: Date;
}

const toErasure = (r: Row): Erasure => ({
  erasureId: String(r.id),
  userId: r.user_id,
  requestedBy: r.requested_by,
  eventId: r.event_id,
  requestedAt: r.requested_at.toISOString(),
});

/**
 * Records the erasure and puts its user.erased into the outbox in ONE transaction: the relay
 * publishes it (with confirms, retried until confirmed) if and only if the audit row committed, so
 * a crash anywhere loses neither and never publishes an unaudited erasure.
 *
 * Idempotent per request: a second call with the same requestKey inserts nothing (ON CONFLICT waits
 * for a concurrent first call to commit, then finds its row) and returns the first call's row
 * ('replayed'); the same key for another user is 'key-reused', and nothing is written.
 */
export async function requestErasure(pool: Pool, req: ErasureRequest): Promise<ErasureResult> {
  return withTransaction(pool, async (tx) => {
    const eventId = randomUUID();
    const inserted = await tx.query<Row>(
      `INSERT INTO user_erasures (request_key, user_id, requested_by, event_id) VALUES ($1, $2, $3, $4)
       ON CONFLICT (request_key) DO NOTHING
       RETURNING id::text, user_id, requested_by, event_id::text, requested_at`,
      [req.requestKey, req.userId, req.requestedBy, eventId],
    );
    const row = inserted.rows[0];
    if (!row) {
      const existing = await tx.query<Row>(
        `SELECT id::text, user_id, requested_by, event_id::text, requested_at FROM user_erasures WHERE request_key = $1`,
        [req.requestKey],
      );
      const erasure = toErasure(existing.rows[0]);
      return { kind: erasure.userId === req.userId ? 'replayed' : 'key-reused', erasure };
    }
    const event = buildEvent(
      'user.erased',
      { userId: req.userId, erasureId: String(row.id), ...(req.cause ? { cause: req.cause } : {}) },
      { producer: req.producer, id: eventId, occurredAt: row.requested_at },
    );
    // Aggregate: the user, so two erasures of one user are published in order.
    await enqueueEvents(tx, req.producer, [{ event, aggregateId: req.userId }]);
    return { kind: 'created', erasure: toErasure(row) };
  });
}

export interface ErasureStatus extends Erasure {
  /** When the relay's publish of user.erased was confirmed by the broker; null while it waits. */
  publishedAt: string | null;
  /** Each consumer of user.erased (its inbox name: the queue), with when it erased; null while it has not. */
  consumers: Array<{ consumer: string; processedAt: string | null }>;
}

/**
 * An erasure with its progress: when its user.erased was published (libs/outbox's `outboxSentAt`)
 * and when each consumer erased (libs/idempotency's `processedAtBy`, its inbox rows). An inbox row
 * older than the inbox retention (INBOX_RETENTION_DAYS) has been purged: that consumer then shows
 * null again, which the route says.
 */
export async function erasureStatus(
  pool: Pool,
  erasureId: string,
  consumers: readonly string[],
): Promise<ErasureStatus | null> {
  const { rows } = await pool.query<Row>(
    `SELECT id::text, user_id, requested_by, event_id::text, requested_at FROM user_erasures WHERE id = $1::bigint`,
    [erasureId],
  );
  const row = rows[0];
  if (!row) return null;
  const [sent, done] = await Promise.all([
    outboxSentAt(pool, [row.event_id]),
    processedAtBy(pool, consumers, row.event_id),
  ]);
  return {
    ...toErasure(row),
    publishedAt: sent.get(row.event_id)?.toISOString() ?? null,
    consumers: consumers.map((consumer) => ({ consumer, processedAt: done.get(consumer)?.toISOString() ?? null })),
  };
}
