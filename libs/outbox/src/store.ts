import type { PoolClient } from 'pg';
import type { EnvelopeLike } from '@community/messaging';
import type { TraceCarrier } from './trace';

export interface ClaimedRow {
  id: string;
  aggregateId: string;
  eventId: string;
  eventType: string;
  routingKey: string;
  payload: EnvelopeLike;
  attempts: number;
  /** The W3C trace context of whoever wrote the row (NULL when tracing was off). */
  traceContext: TraceCarrier | null;
}

export interface Head {
  id: string;
  aggregateId: string;
  /** Until its backoff ends (database clock); <= 0 when it may be published now. */
  dueInMs: number;
}

export interface ClaimedHeads {
  /** Every head looked at, in aggregate order (the relay's round-robin cursor moves past them). */
  heads: Head[];
  /** The due heads this transaction locked, in id order: the rows to publish now. */
  rows: ClaimedRow[];
}

/**
 * Finds the head (oldest unsent row) of each aggregate with a backlog, for up to `limit` aggregates
 * whose id sorts after `afterAggregate`, and locks the due ones for the rest of the transaction,
 * in one statement (one round trip per relay cycle instead of two).
 *
 * Finding: a loose index scan over the partial index (producer, aggregate_id, id) WHERE sent_at IS
 * NULL, one index descent per aggregate, so the cost is O(limit · log n) however deep any single
 * aggregate's backlog is. (Scanning rows in id order instead would wade through every queued row of
 * a busy aggregate to find the few heads behind it.)
 *
 * Locking: `FOR UPDATE SKIP LOCKED` in id order. A head another relay is publishing is skipped, not
 * waited for (and its successors are not heads, so they cannot be taken here either); a head that
 * another relay sent meanwhile is re-checked against `sent_at IS NULL` under the lock and dropped.
 * The locking CTE has a side effect (row locks), so PostgreSQL evaluates it once, never inlined.
 *
 * Only heads are ever published: the next row of an aggregate becomes a head when this one's
 * `sent_at` is committed, which happens only after its broker confirm. Per aggregate, at most one
 * message is in flight across all relays, and it is in the queue before its successor is sent.
 */
export async function claimHeads(
  tx: PoolClient,
  producer: string,
  afterAggregate: string,
  limit: number,
): Promise<ClaimedHeads> {
  const { rows } = await tx.query<{
    id: string;
    aggregate_id: string;
    due_in_ms: number;
    locked: boolean;
    event_id: string | null;
    event_type: string | null;
    routing_key: string | null;
    payload: EnvelopeLike | null;
    attempts: number | null;
    trace_context: TraceCarrier | null;
  }>({
    // Deliberately not a named (prepared) statement: its best plan depends on how big the table is,
    // and a generic plan cached while it was small scanned every unsent row against the heads
    // (1.4 s per cycle at 25,000 unsent rows, against ~10 ms planned afresh). Planning it once per
    // cycle costs far less than one such cycle, whatever pool the relay is given.
    text: `WITH RECURSIVE heads(aggregate_id, id, next_attempt_at, n) AS (
       (SELECT aggregate_id, id, next_attempt_at, 1 FROM outbox_messages
        WHERE producer = $1 AND sent_at IS NULL AND aggregate_id > $2
        ORDER BY aggregate_id, id LIMIT 1)
       UNION ALL
       SELECT nxt.aggregate_id, nxt.id, nxt.next_attempt_at, h.n + 1
       FROM heads h
       CROSS JOIN LATERAL (
         SELECT aggregate_id, id, next_attempt_at FROM outbox_messages
         WHERE producer = $1 AND sent_at IS NULL AND aggregate_id > h.aggregate_id
         ORDER BY aggregate_id, id LIMIT 1
       ) nxt
       WHERE h.n < $3
     ),
     locked AS (
       SELECT o.id, o.event_id, o.event_type, o.routing_key, o.payload, o.attempts, o.trace_context
       FROM outbox_messages o
       WHERE o.id IN (SELECT id FROM heads WHERE next_attempt_at <= now())
         AND o.sent_at IS NULL AND o.next_attempt_at <= now()
       ORDER BY o.id
       FOR UPDATE SKIP LOCKED
     )
     SELECT h.id, h.aggregate_id, (extract(epoch FROM h.next_attempt_at - now()) * 1000)::float8 AS due_in_ms,
            l.id IS NOT NULL AS locked, l.event_id, l.event_type, l.routing_key, l.payload, l.attempts, l.trace_context
     FROM heads h LEFT JOIN locked l ON l.id = h.id
     ORDER BY h.n`,
    values: [producer, afterAggregate, limit],
  });
  const heads: Head[] = [];
  const claimed: ClaimedRow[] = [];
  for (const r of rows) {
    heads.push({ id: r.id, aggregateId: r.aggregate_id, dueInMs: r.due_in_ms });
    if (!r.locked) continue;
    claimed.push({
      id: r.id,
      aggregateId: r.aggregate_id,
      eventId: r.event_id ?? '',
      eventType: r.event_type ?? '',
      routingKey: r.routing_key ?? '',
      payload: r.payload as EnvelopeLike,
      attempts: r.attempts ?? 0,
      traceContext: r.trace_context,
    });
  }
  // Publish order is id order (bigint ids as strings: shorter is smaller, then lexicographic).
  claimed.sort((a, b) => a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { heads, rows: claimed };
}

export async function markSent(tx: PoolClient, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  // Not prepared, like claimHeads: a generic plan made on a small table could scan it all.
  await tx.query(`UPDATE outbox_messages SET sent_at = now(), last_error = NULL WHERE id = ANY($1::bigint[])`, [ids]);
}

export interface Failure {
  id: string;
  error: string;
  retryInMs: number;
}

/** The rows stay unsent: one more attempt counted, the reason kept for operators, a backoff set. */
export async function markFailed(tx: PoolClient, failures: Failure[]): Promise<void> {
  if (failures.length === 0) return;
  await tx.query(
    `UPDATE outbox_messages o
     SET attempts = o.attempts + 1,
         last_error = f.error,
         next_attempt_at = now() + make_interval(secs => f.retry_ms / 1000.0)
     FROM unnest($1::bigint[], $2::text[], $3::float8[]) AS f(id, error, retry_ms)
     WHERE o.id = f.id`,
    [failures.map((f) => f.id), failures.map((f) => f.error), failures.map((f) => f.retryInMs)],
  );
}

/**
 * Retention of sent rows, the outbox's only purge (the reconciler schedules it as `retention.outbox`;
 * the relays never delete). Sent rows older than the horizon go in short batches (short transactions,
 * no long lock on a hot table); `producer` narrows it to one producer. Unsent rows are never deleted,
 * whatever their age: they are stuck work, not garbage. With `dryRun`, they are only counted.
 */
export async function purgeSentOutbox(
  pool: { query: PoolClient['query'] },
  o: { olderThanMs: number; batchSize?: number; producer?: string; signal?: AbortSignal; dryRun?: boolean },
): Promise<{ deleted: number }> {
  const batchSize = o.batchSize ?? 5000;
  const where = `sent_at IS NOT NULL AND sent_at < now() - make_interval(secs => $1::float8 / 1000) AND ($2::text IS NULL OR producer = $2)`;
  const params = [o.olderThanMs, o.producer ?? null];
  if (o.dryRun) {
    const res = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox_messages WHERE ${where}`,
      params,
    );
    return { deleted: res.rows[0].n };
  }
  let deleted = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    const res = await pool.query(
      `DELETE FROM outbox_messages WHERE id IN (SELECT id FROM outbox_messages WHERE ${where} ORDER BY sent_at LIMIT $3)`,
      [...params, batchSize],
    );
    deleted += res.rowCount ?? 0;
    if ((res.rowCount ?? 0) < batchSize) return { deleted };
  }
}
