import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '@community/db';
import { decodeCursor, encodeCursor, type Cursor } from './cursor';
import { notifyInboxes } from './ingest';
import { applyItemDelta, refreshItems, unreadItemsOf } from './items';

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
  /** Inbox version of this item's last change; send it back with read/unread. */
  version: number;
  /**
   * A grouped item ("Ana, Budi and 3 others reacted to your post"; docs/NOTIFICATIONS.md
   * "Grouping"): null for an ungrouped notification. The item's other fields are its latest member's.
   */
  group: NotificationGroup | null;
}

export interface NotificationGroup {
  /** Stable for the group: a client replaces the item it shows for this key. */
  key: string;
  /** Members (reactions, follows, replies, comments) in the item. */
  count: number;
  /** Distinct actors among them. */
  actorCount: number;
  /** The latest distinct actors, newest first (at most 3), with their display names (null: unknown). */
  actors: Array<{ id: string; name: string | null }>;
}

export interface InboxState {
  count: number;
  version: number;
}

const ITEM_COLUMNS = `n.id, n.type, n.actor_id, u.display_name AS actor_name, n.resource_type, n.resource_id, n.excerpt,
  n.created_at, CASE WHEN n.item_unread THEN NULL ELSE n.read_at END AS read_at,
  greatest(n.state_version, n.item_version) AS state_version, n.item_version, n.group_key, n.item_count,
  n.item_actor_count,
  (SELECT coalesce(json_agg(json_build_object('id', x.a, 'name', xu.display_name) ORDER BY x.ord), '[]')
     FROM unnest(n.item_actors) WITH ORDINALITY AS x(a, ord) LEFT JOIN notification_users xu ON xu.user_id = x.a
  ) AS item_actors`;
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
  item_version: string;
  group_key: string | null;
  item_count: number;
  item_actor_count: number;
  item_actors: Array<{ id: string; name: string | null }>;
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
    group:
      r.group_key === null
        ? null
        : { key: r.group_key, count: r.item_count, actorCount: r.item_actor_count, actors: r.item_actors },
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
    // Items, not rows: ungrouped rows and the heads of groups, in the order of their newest member.
    let where = 'n.user_id = $1 AND n.in_app AND n.item_head';
    if (opts.unreadOnly) where += ' AND n.item_unread';
    if (opts.cursor) {
      params.push(opts.cursor.version, opts.cursor.id);
      where += ' AND (n.item_version, n.id) < ($3, $4::uuid)';
    }
    const page = await tx.query<ItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM} WHERE ${where} ORDER BY n.item_version DESC, n.id DESC LIMIT $2`,
      params,
    );
    return { rows: page.rows, state: await readState(tx, userId) };
  });
  const more = rows.length > opts.limit;
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    items: page.map(toItem),
    nextCursor: more && last ? encodeCursor({ version: Number(last.item_version), id: last.id }) : null,
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
    const found = await fetchItem(tx, userId, id);
    if (!found) return { status: 'not_found' };
    const { item: current, groupKey } = found;
    const state = { count: locked.rows[0].unread_count, version: Number(locked.rows[0].version) };
    if ((current.readAt !== null) === read) return { status: 'unchanged', item: current, state };
    if (seenVersion !== undefined && current.version > seenVersion) return { status: 'stale', item: current };

    const version = state.version + 1;
    const before = await unreadItemsOf(tx, [userId]);
    if (groupKey === null) {
      await tx.query(
        `UPDATE notification_items SET read_at = CASE WHEN $2 THEN now() END, item_unread = NOT $2, state_version = $3
          WHERE id = $1`,
        [current.id, read, version],
      );
    } else if (read) {
      // Reading a group reads every member; its version moves with it.
      await tx.query(
        `UPDATE notification_items SET read_at = coalesce(read_at, now()), state_version = $3
          WHERE user_id = $1 AND group_key = $2 AND in_app`,
        [userId, groupKey, version],
      );
    } else {
      // Unread again: its latest member (the head) is unread, so the item is.
      await tx.query(
        `UPDATE notification_items SET read_at = CASE WHEN id = $3 THEN NULL ELSE read_at END, state_version = $4
          WHERE user_id = $1 AND group_key = $2 AND in_app`,
        [userId, groupKey, current.id, version],
      );
    }
    if (groupKey !== null) await refreshItems(tx, [{ userId, groupKey }]);
    const counted = await applyItemDelta(tx, before);
    await tx.query('UPDATE notification_counters SET version = $2 WHERE user_id = $1', [userId, version]);
    await notifyInboxes(tx, [userId]);
    const item = (await fetchItem(tx, userId, current.id))?.item ?? current;
    return { status: 'changed', item, state: { count: counted.get(userId) ?? 0, version } };
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
    const before = await unreadItemsOf(tx, [userId]);
    const marked = await tx.query<{ group_key: string | null }>(
      `UPDATE notification_items SET read_at = now(), state_version = $3, item_unread = (group_key IS NOT NULL AND item_unread)
       WHERE user_id = $1 AND in_app AND read_at IS NULL AND state_version <= $2
       RETURNING group_key`,
      [userId, limit, version],
    );
    const n = marked.rowCount ?? 0;
    if (n === 0) return { count: locked.rows[0].unread_count, version: current, marked: 0 };
    // A group keeps its members that arrived after `upTo` unread: its item is recomputed.
    const groups = [...new Set(marked.rows.flatMap((r) => (r.group_key === null ? [] : [r.group_key])))];
    await refreshItems(
      tx,
      groups.map((groupKey) => ({ userId, groupKey })),
    );
    const counted = await applyItemDelta(tx, before);
    await tx.query('UPDATE notification_counters SET version = $2 WHERE user_id = $1', [userId, version]);
    await notifyInboxes(tx, [userId]);
    return { count: counted.get(userId) ?? 0, version, marked: n };
  });
}

/**
 * The item a notification id stands for: the notification itself, or for a member of a group the
 * group's item (a client may hold any member's id: the item's id changes as later members arrive).
 */
async function fetchItem(
  db: PoolClient,
  userId: string,
  id: string,
): Promise<{ item: NotificationItem; groupKey: string | null } | undefined> {
  const res = await db.query<ItemRow>(
    `SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM}
      WHERE n.user_id = $2 AND n.in_app AND n.item_head
        AND (n.id = $1 OR n.group_key = (SELECT m.group_key FROM notification_items m
                                          WHERE m.id = $1 AND m.user_id = $2 AND m.in_app))`,
    [id, userId],
  );
  const row = res.rows[0];
  return row ? { item: toItem(row), groupKey: row.group_key } : undefined;
}

export interface InboxChanges extends InboxState {
  /** In-app notifications created after `sinceVersion`, oldest first (at most `limit`, the newest). */
  items: NotificationItem[];
  /** More than `limit` were created since: `items` holds only the newest. */
  truncated: boolean;
  /**
   * Ids withdrawn after `sinceVersion` (their source was deleted, docs/NOTIFICATIONS.md
   * "Retraction"), oldest first: a client drops them from the list it holds. Empty without `sinceVersion`.
   */
  withdrawn: string[];
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
  const res = await pool.query<
    ItemRow & { inbox_version: string; unread_count: number; id: string | null; withdrawn_ids: string[] | null }
  >(
    `SELECT c.version AS inbox_version, c.unread_count, w.withdrawn_ids, x.*
     FROM notification_counters c
     LEFT JOIN LATERAL (
       SELECT array_agg(n.id ORDER BY n.state_version, n.id) AS withdrawn_ids FROM notification_items n
       WHERE n.user_id = c.user_id AND n.withdrawn_at IS NOT NULL AND n.state_version > $2::bigint
     ) w ON true
     LEFT JOIN LATERAL (
       SELECT ${ITEM_COLUMNS} FROM ${ITEM_FROM}
       WHERE n.user_id = c.user_id AND n.in_app AND n.item_head AND n.item_version > COALESCE($2::bigint, c.version)
       ORDER BY n.item_version DESC, n.id DESC
       LIMIT $3
     ) x ON true
     WHERE c.user_id = $1`,
    [userId, sinceVersion ?? null, limit + 1],
  );
  if (res.rows.length === 0) return { count: 0, version: 0, items: [], truncated: false, withdrawn: [] };
  const first = res.rows[0];
  const rows = res.rows.filter((r) => r.id !== null);
  const items = rows.slice(0, limit).map(toItem).reverse();
  return {
    count: first.unread_count,
    version: Number(first.inbox_version),
    items,
    truncated: rows.length > limit,
    withdrawn: first.withdrawn_ids ?? [],
  };
}
