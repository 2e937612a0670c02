import type { Pool, PoolClient } from 'pg';
import type { DeadLetter } from './dead-letter';
import { whereOf, type DlqFilter } from './filter';
import { NOT_JSON_PATTERN, type PermanentCause } from './permanence';

type Db = Pool | PoolClient;

/**
 * Ingest of one dead letter: the row (idempotent on message id + dead-letter time, so a copy the
 * broker redelivers after a crash between commit and ack is not stored twice) and its group.
 * Returns whether the row is new and whether its cause was never seen before.
 */
export async function insertDeadLetter(
  tx: PoolClient,
  d: DeadLetter,
): Promise<{ inserted: boolean; newCause: boolean }> {
  const row = await tx.query(
    `INSERT INTO dlq_messages (queue, original_queue, message_id, dead_lettered_at, properties, headers, body, routing_key,
                               message_type, error_class, error_message, error_kind, handler, attempts, fingerprint)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (message_id, dead_lettered_at) DO NOTHING
     RETURNING id`,
    [
      d.queue,
      d.originalQueue,
      d.messageId,
      d.deadLetteredAt,
      d.properties,
      d.headers,
      d.body,
      d.routingKey,
      d.messageType,
      d.errorClass,
      d.errorMessage,
      d.errorKind,
      d.handler,
      d.attempts,
      d.fingerprint,
    ],
  );
  if (row.rowCount === 0) return { inserted: false, newCause: false };
  const group = await tx.query<{ created: boolean }>(
    `INSERT INTO dlq_groups (fingerprint, error_class, normalized, handler, message_type, sample_message, first_seen, last_seen, total)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, 1)
     ON CONFLICT (fingerprint) DO UPDATE SET
       total = dlq_groups.total + 1,
       first_seen = LEAST(dlq_groups.first_seen, EXCLUDED.first_seen),
       last_seen = GREATEST(dlq_groups.last_seen, EXCLUDED.last_seen)
     RETURNING (xmax = 0) AS created`,
    [d.fingerprint, d.errorClass, d.normalized, d.handler, d.messageType, d.errorMessage, d.deadLetteredAt],
  );
  return { inserted: true, newCause: group.rows[0].created };
}

export interface QueueSummary {
  queue: string;
  originalQueue: string;
  pending: number;
  oldestDeadLetteredAt: string | null;
  oldestAgeSeconds: number | null;
  lastDeadLetteredAt: string | null;
  groups: number;
}

export async function summaryByQueue(db: Db): Promise<Array<Omit<QueueSummary, 'originalQueue'>>> {
  const { rows } = await db.query(
    `SELECT queue, count(*)::int AS pending, min(dead_lettered_at) AS oldest, max(dead_lettered_at) AS last,
            count(DISTINCT fingerprint)::int AS groups,
            extract(epoch FROM now() - min(dead_lettered_at))::float8 AS oldest_age
       FROM dlq_messages WHERE state = 'pending' GROUP BY queue`,
  );
  return rows.map((r) => ({
    queue: r.queue,
    pending: r.pending,
    oldestDeadLetteredAt: r.oldest ? new Date(r.oldest).toISOString() : null,
    oldestAgeSeconds: r.oldest_age === null ? null : Math.max(0, Math.round(r.oldest_age)),
    lastDeadLetteredAt: r.last ? new Date(r.last).toISOString() : null,
    groups: r.groups,
  }));
}

export interface GroupRow {
  fingerprint: string;
  errorClass: string;
  normalized: string;
  handler: string | null;
  messageType: string | null;
  sampleMessage: string;
  firstSeen: string;
  lastSeen: string;
  total: number;
  /** Messages of this group matching the filter (pending by default), by DLQ. */
  count: number;
  queues: string[];
}

/** Groups with at least one message matching the filter, biggest first. */
export async function listGroups(db: Db, filter: DlqFilter, limit = 100): Promise<GroupRow[]> {
  const w = whereOf(filter);
  const { rows } = await db.query(
    `SELECT g.fingerprint, g.error_class, g.normalized, g.handler, g.message_type, g.sample_message, g.first_seen, g.last_seen, g.total,
            s.count, s.queues
       FROM (SELECT m.fingerprint, count(*)::int AS count, array_agg(DISTINCT m.queue) AS queues
               FROM dlq_messages m WHERE ${w.sql} GROUP BY m.fingerprint) s
       JOIN dlq_groups g USING (fingerprint)
      ORDER BY s.count DESC, g.last_seen DESC
      LIMIT ${Math.min(Math.max(1, limit), 500)}`,
    w.params,
  );
  return rows.map((r) => ({
    fingerprint: r.fingerprint,
    errorClass: r.error_class,
    normalized: r.normalized,
    handler: r.handler,
    messageType: r.message_type,
    sampleMessage: r.sample_message,
    firstSeen: new Date(r.first_seen).toISOString(),
    lastSeen: new Date(r.last_seen).toISOString(),
    total: r.total,
    count: r.count,
    queues: r.queues,
  }));
}

export interface MessageRow {
  id: string;
  queue: string;
  originalQueue: string;
  messageId: string;
  deadLetteredAt: string;
  messageType: string | null;
  routingKey: string | null;
  errorClass: string;
  errorMessage: string;
  errorKind: string;
  handler: string | null;
  attempts: number;
  fingerprint: string;
  state: string;
  replayCount: number;
  actedAt: string | null;
}

const MESSAGE_COLUMNS = `m.id::text, m.queue, m.original_queue, m.message_id, m.dead_lettered_at, m.message_type, m.routing_key,
  m.error_class, m.error_message, m.error_kind, m.handler, m.attempts, m.fingerprint, m.state, m.replay_count, m.acted_at`;

function messageRow(r: Record<string, unknown>): MessageRow {
  return {
    id: r.id as string,
    queue: r.queue as string,
    originalQueue: r.original_queue as string,
    messageId: r.message_id as string,
    deadLetteredAt: new Date(r.dead_lettered_at as string).toISOString(),
    messageType: r.message_type as string | null,
    routingKey: r.routing_key as string | null,
    errorClass: r.error_class as string,
    errorMessage: r.error_message as string,
    errorKind: r.error_kind as string,
    handler: r.handler as string | null,
    attempts: r.attempts as number,
    fingerprint: r.fingerprint as string,
    state: r.state as string,
    replayCount: r.replay_count as number,
    actedAt: r.acted_at ? new Date(r.acted_at as string).toISOString() : null,
  };
}

/**
 * A page of the filtered list, newest first; `cursor` is the last id of the previous page.
 * `total` counts every match and `asOf` is the highest matching id: a bulk action sent with the
 * same filter and this `asOf` acts on exactly these `total` messages.
 */
export async function listMessages(
  db: Db,
  filter: DlqFilter,
  page: { limit: number; cursor?: string },
): Promise<{ items: MessageRow[]; total: number; asOf: string | null; nextCursor: string | null }> {
  const w = whereOf(filter);
  const head = await db.query<{ total: number; max: string | null }>(
    `SELECT count(*)::int AS total, max(m.id)::text AS max FROM dlq_messages m WHERE ${w.sql}`,
    w.params,
  );
  const params = [...w.params];
  let cond = w.sql;
  if (page.cursor) {
    params.push(page.cursor);
    cond += ` AND m.id < $${params.length}::bigint`;
  }
  params.push(page.limit);
  const { rows } = await db.query(
    `SELECT ${MESSAGE_COLUMNS} FROM dlq_messages m WHERE ${cond} ORDER BY m.id DESC LIMIT $${params.length}`,
    params,
  );
  const items = rows.map(messageRow);
  return {
    items,
    total: head.rows[0].total,
    asOf: filter.asOf ?? head.rows[0].max,
    nextCursor: items.length === page.limit ? items[items.length - 1].id : null,
  };
}

export interface MessageDetail extends MessageRow {
  /** Of a discarded message: who discarded it and when (its last discard), and until when a restore can undo it. */
  discardedBy?: string;
  discardedAt?: string;
  restorableUntil?: string;
  properties: Record<string, unknown>;
  headers: Record<string, unknown>;
  /** The body as text (UTF-8), and parsed when it is JSON. */
  body: string;
  bodyJson: unknown;
  history: Array<{
    operationId: string;
    action: string;
    requestedBy: string;
    result: string;
    detail: string | null;
    at: string | null;
  }>;
}

export async function getMessage(
  db: Db,
  id: string,
  restoreWindowMs: number = DEFAULT_RESTORE_WINDOW_MS,
): Promise<MessageDetail | null> {
  const { rows } = await db.query(
    `SELECT ${MESSAGE_COLUMNS}, m.properties, m.headers, m.body FROM dlq_messages m WHERE m.id = $1::bigint`,
    [id],
  );
  if (rows.length === 0) return null;
  const r = rows[0];
  const body = (r.body as Buffer).toString('utf8');
  let bodyJson: unknown = null;
  try {
    bodyJson = JSON.parse(body);
  } catch {
    bodyJson = null;
  }
  const history = await db.query(
    `SELECT o.id::text AS operation_id, o.action, o.requested_by, i.result, i.detail, i.at
       FROM dlq_operation_items i JOIN dlq_operations o ON o.id = i.operation_id
      WHERE i.message_id = $1::bigint ORDER BY o.id`,
    [id],
  );
  const row = messageRow(r);
  const discard = history.rows.filter((h) => h.action === 'discard' && h.result === 'discarded').at(-1);
  const discarded =
    row.state === 'discarded' && discard
      ? {
          discardedBy: discard.requested_by as string,
          discardedAt: new Date(discard.at).toISOString(),
          restorableUntil: new Date(new Date(row.actedAt ?? discard.at).getTime() + restoreWindowMs).toISOString(),
        }
      : {};
  return {
    ...row,
    ...discarded,
    properties: r.properties,
    headers: r.headers,
    body,
    bodyJson,
    history: history.rows.map((h) => ({
      operationId: h.operation_id,
      action: h.action,
      requestedBy: h.requested_by,
      result: h.result,
      detail: h.detail,
      at: h.at ? new Date(h.at).toISOString() : null,
    })),
  };
}

/** The selection of an action: explicit ids, or a filter (`state` default pending). */
export type Selection = { ids: string[] } | { filter: DlqFilter };

export type Action = 'replay' | 'discard' | 'restore';

/**
 * How long a discard can be undone (`restore`): DLQ_RETENTION_DAYS, the age at which the
 * retention job purges a discarded row (docs/DLQ-CONSOLE.md "Discard"). 30 days, its default,
 * unless the reconciler passes its configured value.
 */
export const DEFAULT_RESTORE_WINDOW_MS = 30 * 86_400_000;

/**
 * The messages an action would touch. Replay and discard: only `pending` or `replayed` ones,
 * whatever the filter says: replay never touches a discarded message (the DB state is the truth),
 * discard never one twice, and neither one a message another replay is publishing right now.
 * Restore: only `discarded` ones discarded less than the restore window ago (a filter's `state`
 * is ignored: nothing else can be restored).
 */
function selectionSql(
  selection: Selection,
  action: Action = 'replay',
  restoreWindowMs = DEFAULT_RESTORE_WINDOW_MS,
): { sql: string; params: unknown[] } {
  const base =
    'ids' in selection
      ? { sql: `m.id = ANY($1::bigint[])`, params: [selection.ids] as unknown[] }
      : whereOf(action === 'restore' ? { ...selection.filter, state: 'discarded' } : selection.filter);
  if (action !== 'restore') return { sql: `${base.sql} AND m.state IN ('pending', 'replayed')`, params: base.params };
  const window = `$${base.params.length + 1}`;
  return {
    sql: `${base.sql} AND m.state = 'discarded' AND m.acted_at > now() - make_interval(secs => ${window}::float8 / 1000)`,
    params: [...base.params, restoreWindowMs],
  };
}

export interface Preview {
  matched: number;
  asOf: string | null;
  byQueue: Array<{ originalQueue: string; count: number }>;
  byGroup: Array<{ fingerprint: string; errorClass: string; count: number }>;
  sample: MessageRow[];
}

/**
 * The selection's dead letters a consumer refused as permanent, per class (with one message of each,
 * which tells a body that is not JSON from another ContractError): what a replay dry run warns about
 * (permanence.ts).
 */
export async function permanentCauses(db: Db, selection: Selection): Promise<PermanentCause[]> {
  const s = selectionSql(selection, 'replay');
  // Grouped by class and by whether the body was not JSON at all (the one ContractError that no
  // deploy fixes), with one message of each group for permanenceOf to read.
  const notJson = `$${s.params.length + 1}`;
  const { rows } = await db.query(
    `SELECT m.error_class, min(m.error_message) AS error_message, count(*)::int AS n
       FROM dlq_messages m WHERE ${s.sql} AND m.error_kind = 'permanent'
      GROUP BY m.error_class, m.error_message ~ ${notJson} ORDER BY 3 DESC`,
    [...s.params, NOT_JSON_PATTERN],
  );
  return rows.map((r) => ({ errorClass: r.error_class, errorMessage: r.error_message, count: r.n }));
}

export async function preview(
  db: Db,
  selection: Selection,
  action: Action = 'replay',
  restoreWindowMs?: number,
): Promise<Preview> {
  const s = selectionSql(selection, action, restoreWindowMs);
  const [head, byQueue, byGroup, sample] = await Promise.all([
    db.query(`SELECT count(*)::int AS n, max(m.id)::text AS max FROM dlq_messages m WHERE ${s.sql}`, s.params),
    db.query(
      `SELECT m.original_queue, count(*)::int AS n FROM dlq_messages m WHERE ${s.sql} GROUP BY 1 ORDER BY 2 DESC`,
      s.params,
    ),
    db.query(
      `SELECT m.fingerprint, min(m.error_class) AS error_class, count(*)::int AS n FROM dlq_messages m WHERE ${s.sql} GROUP BY 1 ORDER BY 3 DESC LIMIT 20`,
      s.params,
    ),
    db.query(`SELECT ${MESSAGE_COLUMNS} FROM dlq_messages m WHERE ${s.sql} ORDER BY m.id DESC LIMIT 10`, s.params),
  ]);
  return {
    matched: head.rows[0].n,
    asOf: head.rows[0].max,
    byQueue: byQueue.rows.map((r) => ({ originalQueue: r.original_queue, count: r.n })),
    byGroup: byGroup.rows.map((r) => ({ fingerprint: r.fingerprint, errorClass: r.error_class, count: r.n })),
    sample: sample.rows.map(messageRow),
  };
}

/** Creates the operation and fixes its items (the exact messages) in one transaction. */
export async function createOperation(
  tx: PoolClient,
  op: {
    action: Action;
    requestedBy: string;
    selection: Selection;
    ratePerSecond: number | null;
    restoreWindowMs?: number;
  },
): Promise<{ id: string; matched: number }> {
  const created = await tx.query<{ id: string }>(
    `INSERT INTO dlq_operations (action, requested_by, selection, rate_per_second, matched) VALUES ($1, $2, $3, $4, 0) RETURNING id::text`,
    [op.action, op.requestedBy, op.selection, op.ratePerSecond],
  );
  const id = created.rows[0].id;
  const s = selectionSql(op.selection, op.action, op.restoreWindowMs);
  const items = await tx.query(
    `INSERT INTO dlq_operation_items (operation_id, message_id) SELECT $${s.params.length + 1}::bigint, m.id FROM dlq_messages m WHERE ${s.sql}`,
    [...s.params, id],
  );
  const matched = items.rowCount ?? 0;
  await tx.query(
    `UPDATE dlq_operations SET matched = $2, state = CASE WHEN $2 = 0 THEN 'done' ELSE state END, finished_at = CASE WHEN $2 = 0 THEN now() END WHERE id = $1`,
    [id, matched],
  );
  return { id, matched };
}

export interface OperationRow {
  id: string;
  action: string;
  requestedBy: string;
  selection: unknown;
  ratePerSecond: number | null;
  state: string;
  matched: number;
  succeeded: number;
  failed: number;
  skipped: number;
  remaining: number;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export async function getOperation(db: Db, id: string): Promise<OperationRow | null> {
  const { rows } = await db.query(`SELECT * FROM dlq_operations WHERE id = $1::bigint`, [id]);
  if (rows.length === 0) return null;
  const r = rows[0];
  return {
    id: String(r.id),
    action: r.action,
    requestedBy: r.requested_by,
    selection: r.selection,
    ratePerSecond: r.rate_per_second,
    state: r.state,
    matched: r.matched,
    succeeded: r.succeeded,
    failed: r.failed,
    skipped: r.skipped,
    remaining: r.matched - r.succeeded - r.failed - r.skipped,
    error: r.error,
    createdAt: new Date(r.created_at).toISOString(),
    finishedAt: r.finished_at ? new Date(r.finished_at).toISOString() : null,
  };
}

export async function listOperations(db: Db, limit = 20): Promise<OperationRow[]> {
  const { rows } = await db.query<{ id: string }>(`SELECT id::text FROM dlq_operations ORDER BY id DESC LIMIT $1`, [
    limit,
  ]);
  const out: OperationRow[] = [];
  for (const r of rows) {
    const op = await getOperation(db, r.id);
    if (op) out.push(op);
  }
  return out;
}

/**
 * Discard of every item of an operation, in the caller's transaction: each message still in a
 * discardable state is discarded, the others are recorded as skipped (a replay got there first).
 */
export async function discardItems(
  tx: PoolClient,
  operationId: string,
): Promise<{ discarded: number; skipped: number }> {
  const done = await tx.query(
    `WITH d AS (
       UPDATE dlq_messages m SET state = 'discarded', acted_at = now()
         FROM dlq_operation_items i
        WHERE i.operation_id = $1::bigint AND i.message_id = m.id AND m.state IN ('pending', 'replayed')
       RETURNING m.id)
     UPDATE dlq_operation_items i
        SET result = CASE WHEN i.message_id IN (SELECT id FROM d) THEN 'discarded' ELSE 'skipped' END,
            detail = CASE WHEN i.message_id IN (SELECT id FROM d) THEN NULL ELSE 'no longer pending or replayed' END,
            at = now()
      WHERE i.operation_id = $1::bigint
      RETURNING i.result`,
    [operationId],
  );
  const discarded = done.rows.filter((r) => r.result === 'discarded').length;
  const skipped = done.rows.length - discarded;
  await tx.query(
    `UPDATE dlq_operations SET succeeded = $2, skipped = $3, state = 'done', finished_at = now(), heartbeat_at = now() WHERE id = $1::bigint`,
    [operationId, discarded, skipped],
  );
  return { discarded, skipped };
}

/**
 * Restore (the undo of a discard) of every item of an operation, in the caller's transaction: each
 * message still discarded, and discarded less than the window ago, goes back to `pending` (it waits
 * for a decision again); the others are recorded as skipped with the reason.
 */
export async function restoreItems(
  tx: PoolClient,
  operationId: string,
  restoreWindowMs: number,
): Promise<{ restored: number; skipped: number }> {
  const done = await tx.query(
    `WITH r AS (
       UPDATE dlq_messages m SET state = 'pending', acted_at = now()
         FROM dlq_operation_items i
        WHERE i.operation_id = $1::bigint AND i.message_id = m.id AND m.state = 'discarded'
          AND m.acted_at > now() - make_interval(secs => $2::float8 / 1000)
       RETURNING m.id)
     UPDATE dlq_operation_items i
        SET result = CASE WHEN i.message_id IN (SELECT id FROM r) THEN 'restored' ELSE 'skipped' END,
            detail = CASE WHEN i.message_id IN (SELECT id FROM r) THEN NULL ELSE 'no longer discarded, or past the restore window' END,
            at = now()
      WHERE i.operation_id = $1::bigint
      RETURNING i.result`,
    [operationId, restoreWindowMs],
  );
  const restored = done.rows.filter((r) => r.result === 'restored').length;
  const skipped = done.rows.length - restored;
  await tx.query(
    `UPDATE dlq_operations SET succeeded = $2, skipped = $3, state = 'done', finished_at = now(), heartbeat_at = now() WHERE id = $1::bigint`,
    [operationId, restored, skipped],
  );
  return { restored, skipped };
}

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
