import type { PoolClient } from 'pg';
import sql, { type Sql } from 'sql-template-tag';

/**
 * Inbox items (docs/NOTIFICATIONS.md "Grouping"). Every notification keeps its row; the list shows
 * ITEMS: an ungrouped row is its own item, a group's item is its head row, which carries the
 * group's summary. Both functions run inside the caller's transaction, under the users' counter row
 * locks (every writer of an inbox takes them first), so no other writer changes these rows meanwhile.
 */

/** How many of a group's latest distinct actors an item names ("Ana, Budi and 3 others"). */
export const ITEM_ACTORS_SHOWN = 3;

export interface GroupRef {
  userId: string;
  groupKey: string;
}

/** The unread items of the users in `users` (a FROM clause with a `user_id` column): what the counter holds. */
export function unreadItemsSql(users: Sql): Sql {
  return sql`SELECT u.user_id, (SELECT count(*)::int FROM notification_items n
                                 WHERE n.user_id = u.user_id AND n.in_app AND n.item_head AND n.item_unread) AS unread
             FROM ${users}`;
}

/**
 * Recomputes the item of each group from its rows, whatever order they arrived in: the head is the
 * visible (in-app) member with the latest (occurred_at, idempotency_key), so the same set of members
 * always gives the same item (id, actors, count); it carries
 * - item_version: the newest member's created_version (its place in the list; a new member
 *   re-surfaces it at the top),
 * - item_count (members), item_actor_count (distinct actors) and item_actors (the latest
 *   ITEM_ACTORS_SHOWN distinct actors, newest first),
 * - item_unread: any member unread (a member arriving after the item was read makes it unread again).
 * Every other row of the group stops being a head; a group with no visible member shows nothing.
 */
export async function refreshItems(tx: PoolClient, groups: GroupRef[]): Promise<void> {
  const unique = [...new Map(groups.map((g) => [`${g.userId}\u0000${g.groupKey}`, g])).values()];
  if (unique.length === 0) return;
  await tx.query(
    sql`WITH touched AS (
          SELECT * FROM unnest(${unique.map((g) => g.userId)}::text[], ${unique.map((g) => g.groupKey)}::text[])
            AS t(user_id, group_key)
        ),
        rows AS (
          SELECT n.id, n.user_id, n.group_key, n.in_app, n.created_version, n.read_at, n.actor_id, n.occurred_at,
                 row_number() OVER (PARTITION BY n.user_id, n.group_key, n.in_app
                                    ORDER BY n.occurred_at DESC, n.idempotency_key DESC) AS rank
          FROM notification_items n JOIN touched t ON t.user_id = n.user_id AND t.group_key = n.group_key
        ),
        latest_actors AS (
          SELECT user_id, group_key, actor_id, max(occurred_at) AS at FROM rows
          WHERE in_app AND actor_id IS NOT NULL GROUP BY user_id, group_key, actor_id
        ),
        summary AS (
          SELECT r.user_id, r.group_key, count(*)::int AS members, max(r.created_version) AS version,
                 bool_or(r.read_at IS NULL) AS unread, count(DISTINCT r.actor_id)::int AS actor_count,
                 coalesce((SELECT array_agg(a.actor_id ORDER BY a.at DESC, a.actor_id DESC)
                             FROM (SELECT * FROM latest_actors l WHERE l.user_id = r.user_id AND l.group_key = r.group_key
                                   ORDER BY l.at DESC, l.actor_id DESC LIMIT ${ITEM_ACTORS_SHOWN}) AS a), '{}') AS actors
          FROM rows r WHERE r.in_app GROUP BY r.user_id, r.group_key
        )
        UPDATE notification_items n
           SET item_head = (r.in_app AND r.rank = 1),
               item_version = coalesce(s.version, n.created_version),
               item_count = coalesce(s.members, 0),
               item_actor_count = coalesce(s.actor_count, 0),
               item_actors = coalesce(s.actors, '{}'),
               item_unread = coalesce(s.unread, false)
          FROM rows r LEFT JOIN summary s ON s.user_id = r.user_id AND s.group_key = r.group_key
         WHERE n.id = r.id`,
  );
}

/** Each user's unread items now (the partial index notification_items_unread_items_idx). */
export async function unreadItemsOf(tx: PoolClient, userIds: Iterable<string>): Promise<Map<string, number>> {
  const users = [...new Set(userIds)].sort();
  if (users.length === 0) return new Map();
  const res = await tx.query<{ user_id: string; unread: number }>(
    unreadItemsSql(sql`unnest(${users}::text[]) AS u(user_id)`),
  );
  return new Map(res.rows.map((r) => [r.user_id, r.unread]));
}

/**
 * Moves each user's unread counter by how many unread items the change made (now minus `before`,
 * less what the caller already added: `added`), for changes that move items rather than rows
 * (grouped rows, upgrades, retractions, read state of a group). A delta, never an overwrite: a
 * counter that had drifted keeps its drift for the reconciler's repair, which audits it
 * (docs/RECONCILER.md "Unread counters"). Returns the counters as they are now.
 */
export async function applyItemDelta(
  tx: PoolClient,
  before: ReadonlyMap<string, number>,
  added: ReadonlyMap<string, number> = new Map(),
): Promise<Map<string, number>> {
  const after = await unreadItemsOf(tx, before.keys());
  const users = [...after.keys()];
  if (users.length === 0) return new Map();
  const deltas = users.map((u) => (after.get(u) ?? 0) - (before.get(u) ?? 0) - (added.get(u) ?? 0));
  const res = await tx.query<{ user_id: string; unread_count: number }>(
    sql`UPDATE notification_counters c SET unread_count = c.unread_count + d.delta, updated_at = now()
          FROM unnest(${users}::text[], ${deltas}::int[]) AS d(user_id, delta)
         WHERE c.user_id = d.user_id
        RETURNING c.user_id, c.unread_count`,
  );
  return new Map(res.rows.map((r) => [r.user_id, r.unread_count]));
}
