// A replay operation's run: claiming batches of its items, recording each publish, finishing, and
// taking over an operation whose runner died (the heartbeat).
import type { PoolClient } from 'pg';
import type { Db } from './rows';

export interface ReplayItem {
  id: string;
  originalQueue: string;
  messageId: string;
  properties: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: Buffer;
  replayCount: number;
}

/**
 * Claims the next batch of an operation's items for replay: the message moves pending|replayed →
 * replaying (a message discarded since the request is skipped here). A message left `replaying` by
 * a crashed runner is taken again: publishing it twice is absorbed by the consumer's idempotency.
 */
export async function claimReplayBatch(
  tx: PoolClient,
  operationId: string,
  limit: number,
): Promise<{ items: ReplayItem[]; skipped: number }> {
  const pending = await tx.query<{ message_id: string; state: string }>(
    `SELECT i.message_id::text, m.state FROM dlq_operation_items i JOIN dlq_messages m ON m.id = i.message_id
      WHERE i.operation_id = $1::bigint AND i.result = 'pending' ORDER BY i.message_id LIMIT $2 FOR UPDATE OF m`,
    [operationId, limit],
  );
  const skip = pending.rows.filter((r) => r.state === 'discarded').map((r) => r.message_id);
  const take = pending.rows.filter((r) => r.state !== 'discarded').map((r) => r.message_id);
  if (skip.length > 0) {
    await tx.query(
      `UPDATE dlq_operation_items SET result = 'skipped', detail = 'discarded before its turn', at = now() WHERE operation_id = $1::bigint AND message_id = ANY($2::bigint[])`,
      [operationId, skip],
    );
    await tx.query(`UPDATE dlq_operations SET skipped = skipped + $2 WHERE id = $1::bigint`, [
      operationId,
      skip.length,
    ]);
  }
  if (take.length === 0) return { items: [], skipped: skip.length };
  const { rows } = await tx.query(
    `UPDATE dlq_messages SET state = 'replaying' WHERE id = ANY($1::bigint[])
     RETURNING id::text, original_queue, message_id, properties, headers, body, replay_count`,
    [take],
  );
  const items = rows
    .map((r) => ({
      id: r.id,
      originalQueue: r.original_queue,
      messageId: r.message_id,
      properties: r.properties,
      headers: r.headers,
      body: r.body,
      replayCount: r.replay_count,
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
  return { items, skipped: skip.length };
}

/** The result of one replayed message, with the operation's counters, in one transaction. */
export async function recordReplay(
  tx: PoolClient,
  operationId: string,
  messageId: string,
  ok: boolean,
  detail: string | null,
): Promise<void> {
  await tx.query(
    ok
      ? `UPDATE dlq_messages SET state = 'replayed', acted_at = now(), replay_count = replay_count + 1 WHERE id = $1::bigint`
      : `UPDATE dlq_messages SET state = 'pending' WHERE id = $1::bigint AND state = 'replaying'`,
    [messageId],
  );
  await tx.query(
    `UPDATE dlq_operation_items SET result = $3, detail = $4, at = now() WHERE operation_id = $1::bigint AND message_id = $2::bigint`,
    [operationId, messageId, ok ? 'replayed' : 'failed', detail],
  );
  await tx.query(
    `UPDATE dlq_operations SET ${ok ? 'succeeded = succeeded + 1' : 'failed = failed + 1'}, heartbeat_at = now() WHERE id = $1::bigint`,
    [operationId],
  );
}

export async function finishOperation(db: Db, operationId: string, error: string | null): Promise<void> {
  await db.query(
    `UPDATE dlq_operations SET state = $2, error = $3, finished_at = now(), heartbeat_at = now() WHERE id = $1::bigint AND state = 'running'`,
    [operationId, error ? 'failed' : 'done', error],
  );
}

/**
 * Takes over a running replay whose runner stopped touching it (a restart, a crashed replica):
 * one conditional UPDATE, so two replicas never run the same operation.
 */
export async function claimStaleOperation(db: Db, staleMs: number): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    `UPDATE dlq_operations SET heartbeat_at = now()
      WHERE id = (SELECT id FROM dlq_operations WHERE state = 'running' AND action = 'replay'
                    AND heartbeat_at < now() - make_interval(secs => $1::float8 / 1000) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING id::text`,
    [staleMs],
  );
  return rows[0]?.id ?? null;
}

export async function heartbeat(db: Db, operationId: string): Promise<void> {
  await db.query(`UPDATE dlq_operations SET heartbeat_at = now() WHERE id = $1::bigint`, [operationId]);
}
