import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import { decodeCursor, encodeCursor, type Cursor } from './cursor';
import { notifyInboxes } from './ingest';

/**
 * Reads and read-state changes of one user's inbox.
 *
 * Ordering per user: every change first locks the user's counter row (SELECT ... FOR UPDATE), the
 * same row the consumers lock before inserting, so changes of one user apply one at a time across
 * all replicas, each under a new inbox version. A notification remembers the version of its last
 * change (`state_version`); a request that says which version it saw is refused as stale when the
 * notification changed since, so a late retry cannot bring back an old state.
 */

export interface NotificationItem {
  id: string;
  type: string;
  actorId: string | null;
  /** From the user.upserted projection; null when the actor was never seen. */
  actorName: string | null;
  resourceType: string;
  resourceId: string;
  excerpt: string | null;
  createdAt: string;
  readAt: string | null;
  /** Inbox version of this notification's last change; send it back with read/unread. */
  version: number;
}

export interface InboxState {
  count: number;
  version: number;
}

const ITEM_COLUMNS = `n.id, n.type, n.actor_id, u.display_name AS actor_name, n.resource_type, n.resource_id, n.excerpt,
  n.created_at, n.read_at, n.state_version, n.created_version`;
const ITEM_FROM = 'notification_items n LEFT JOIN notification_users u ON u.user_id = n.actor_id';

interface ItemRow {
  id: string;
  type: string;
  actor_id: string | null;
  actor_name: string | null;
  resource_type: string;
  resource_id: string;
  excerpt: string | null;
  created_at: Date;
  read_at: Date | null;
  state_version: string;
  created_version: string;
}

export function toItem(r: ItemRow): NotificationItem {
  return {
    id: r.id,
    type: r.type,
    actorId: r.actor_id,
    actorName: r.actor_name,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    excerpt: r.excerpt,
    createdAt: r.created_at.toISOString(),
    readAt: r.read_at ? r.read_at.toISOString() : null,
    version: Number(r.state_version),
  };
}

export interface ListOptions {
  limit: number;
  cursor?: Cursor;
  unreadOnly: boolean;
}

export interface Page {
  items: NotificationItem[];
  nextCursor: string | null;
  /** The inbox version this page reflects (same snapshot): read-all up to it marks exactly what was seen. */
  version: number;
}

export async function listNotifications(pool: Pool, userId: string, opts: ListOptions): Promise<Page> {
  // One snapshot for the page and the version, so the version describes exactly these rows.
  const { rows, state } = await withTransaction(pool, { isolation: 'repeatable read', readOnly: true }, async (tx) => {
    const params: unknown[] = [userId, opts.limit + 1];
    let where = 'n.user_id = $1 AND n.in_app';
    if (opts.unreadOnly) where += ' AND n.read_at IS NULL';
    if (opts.cursor) {
      params.push(opts.cursor.version, opts.cursor.id);
      where += ' AND (n.created_version, n.id) < ($3, $4::uuid)';
    }
    const page = await tx.query<ItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM} WHERE ${where} ORDER BY n.created_version DESC, n.id DESC LIMIT $2`,
      params,
    );
    return { rows: page.rows, state: await readState(tx, userId) };
  });
  const more = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    items: page.map(toItem),
    nextCursor: more && last ? encodeCursor({ version: Number(last.created_version), id: last.id }) : null,
    version: state.version,
  };
}

export { decodeCursor };

async function readState(db: Pool | PoolClient, userId: string): Promise<InboxState> {
  const res = await db.query<{ unread_count: number; version: string }>(
    'SELECT unread_count, version FROM notification_counters WHERE user_id = $1',
    [userId],
  );
  const row = res.rows[0];
  return row ? { count: row.unread_count, version: Number(row.version) } : { count: 0, version: 0 };
}

export const unreadCount = (pool: Pool, userId: string): Promise<InboxState> => readState(pool, userId);

export type ReadStateResult =
  | { status: 'not_found' }
  | { status: 'stale'; item: NotificationItem }
  | { status: 'unchanged' | 'changed'; item: NotificationItem; state: InboxState };

/**
 * Marks one notification read (`read = true`) or unread. Idempotent: asking for the state it is
 * already in changes nothing and answers the same. `seenVersion`: the item version the client saw;
 * when the notification changed after it (and is not already in the asked state) the request is
 * stale and changes nothing.
 */
export async function setReadState(
  pool: Pool,
  userId: string,
  id: string,
  read: boolean,
  seenVersion?: number,
): Promise<ReadStateResult> {
  return withTransaction(pool, async (tx) => {
    const locked = await tx.query<{ version: string; unread_count: number }>(
      'SELECT version, unread_count FROM notification_counters WHERE user_id = $1 FOR UPDATE',
      [userId],
    );
    if (locked.rowCount === 0) return { status: 'not_found' };
    const current = await fetchItem(tx, userId, id);
    if (!current) return { status: 'not_found' };
    const state = { count: locked.rows[0].unread_count, version: Number(locked.rows[0].version) };
    if ((current.readAt !== null) === read) return { status: 'unchanged', item: current, state };
    if (seenVersion !== undefined && current.version > seenVersion) return { status: 'stale', item: current };

    const version = state.version + 1;
    const updated = await tx.query<{ read_at: Date | null }>(
      'UPDATE notification_items SET read_at = CASE WHEN $2 THEN now() END, state_version = $3 WHERE id = $1 RETURNING read_at',
      [id, read, version],
    );
    const counted = await tx.query<{ unread_count: number }>(
      'UPDATE notification_counters SET unread_count = unread_count + $2, version = $3, updated_at = now() WHERE user_id = $1 RETURNING unread_count',
      [userId, read ? -1 : 1, version],
    );
    await notifyInboxes(tx, [userId]);
    const readAt = updated.rows[0].read_at;
    const item = { ...current, readAt: readAt ? readAt.toISOString() : null, version };
    return { status: 'changed', item, state: { count: counted.rows[0].unread_count, version } };
  });
}

export interface ReadAllResult extends InboxState {
  /** Notifications this call marked read (0 when repeated). */
  marked: number;
}

/**
 * Marks read every unread notification as of inbox version `upTo` (default: now). Notifications
 * that arrived, or were marked unread again, after that version keep their state: a late read-all
 * cannot swallow what the user has not seen yet.
 */
export async function readAll(pool: Pool, userId: string, upTo?: number): Promise<ReadAllResult> {
  return withTransaction(pool, async (tx) => {
    const locked = await tx.query<{ version: string; unread_count: number }>(
      'SELECT version, unread_count FROM notification_counters WHERE user_id = $1 FOR UPDATE',
      [userId],
    );
    if (locked.rowCount === 0) return { count: 0, version: 0, marked: 0 };
    const current = Number(locked.rows[0].version);
    const limit = upTo === undefined ? current : Math.min(upTo, current);
    const version = current + 1;
    const marked = await tx.query(
      `UPDATE notification_items SET read_at = now(), state_version = $3
       WHERE user_id = $1 AND in_app AND read_at IS NULL AND state_version <= $2`,
      [userId, limit, version],
    );
    const n = marked.rowCount ?? 0;
    if (n === 0) return { count: locked.rows[0].unread_count, version: current, marked: 0 };
    const counted = await tx.query<{ unread_count: number }>(
      'UPDATE notification_counters SET unread_count = unread_count - $2, version = $3, updated_at = now() WHERE user_id = $1 RETURNING unread_count',
      [userId, n, version],
    );
    await notifyInboxes(tx, [userId]);
    return { count: counted.rows[0].unread_count, version, marked: n };
  });
}

async function fetchItem(db: PoolClient, userId: string, id: string): Promise<NotificationItem | undefined> {
  const res = await db.query<ItemRow>(
    `SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM} WHERE n.id = $1 AND n.user_id = $2 AND n.in_app`,
    [id, userId],
  );
  return res.rows[0] ? toItem(res.rows[0]) : undefined;
}

export interface InboxChanges extends InboxState {
  /** In-app notifications created after `sinceVersion`, oldest first (at most `limit`, the newest). */
  items: NotificationItem[];
  /** More than `limit` were created since: `items` holds only the newest. */
  truncated: boolean;
}

/**
 * What an SSE stream has to send: the notifications created after `sinceVersion` plus the current
 * count and version, read by ONE statement (one snapshot), so the version sent as the event id
 * covers exactly the rows sent. Without `sinceVersion`, only the current state.
 */
export async function inboxChangesSince(
  pool: Pool,
  userId: string,
  sinceVersion: number | undefined,
  limit: number,
): Promise<InboxChanges> {
  const res = await pool.query<ItemRow & { inbox_version: string; unread_count: number; id: string | null }>(
    `SELECT c.version AS inbox_version, c.unread_count, x.*
     FROM notification_counters c
     LEFT JOIN LATERAL (
       SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM}
       WHERE n.user_id = c.user_id AND n.in_app AND n.created_version > COALESCE($2::bigint, c.version)
       ORDER BY n.created_version DESC, n.id DESC
       LIMIT $3
     ) x ON true
     WHERE c.user_id = $1`,
    [userId, sinceVersion ?? null, limit + 1],
  );
  if (res.rows.length === 0) return { count: 0, version: 0, items: [], truncated: false };
  const first = res.rows[0];
  const rows = res.rows.filter((r) => r.id !== null);
  const items = rows.slice(0, limit).map(toItem).reverse();
  return { count: first.unread_count, version: Number(first.inbox_version), items, truncated: rows.length > limit };
}
