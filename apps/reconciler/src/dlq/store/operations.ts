// Operator actions on a selection of dead letters: what they would touch (the preview), the
// operation and its fixed items, and the discard and restore that complete in one transaction.
import type { PoolClient } from 'pg';
import { whereOf, type DlqFilter } from '../filter';
import { NOT_JSON_PATTERN, type PermanentCause } from '../permanence';
import { DEFAULT_RESTORE_WINDOW_MS, MESSAGE_COLUMNS, messageRow, type Db, type MessageRow } from './rows';

/** The selection of an action: explicit ids, or a filter (`state` default pending). */
export type Selection = { ids: string[] } | { filter: DlqFilter };

export type Action = 'replay' | 'discard' | 'restore';

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
