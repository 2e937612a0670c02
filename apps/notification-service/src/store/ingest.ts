import type { PoolClient } from 'pg';
import type { EmailChannel, NotificationType, PlannedNotification, QuietHours } from '@community/contracts';
import { inboxClaim } from '@community/idempotency';
import sql, { raw, type Sql } from 'sql-template-tag';
import type { StoredPreference } from '../domain/preferences';
import { RETRACTION_LOCK_KEY } from './retraction-lock';
import { unreadItemsSql } from './items';

/**
 * The SQL of the consumers' batch transaction: two statements, each covering the whole batch
 * (unnest arrays, never one statement per event), because under load every round trip to
 * PostgreSQL costs milliseconds of waiting (docs/BENCHMARKS.md):
 *
 * 1. claimAndLockInboxes: the inbox claim + the recipients' counter locks + their preferences,
 *    quiet hours and time zone;
 * 2. writeNotifications: the rows + the counters + the SSE NOTIFY; it returns what the handler
 *    emits as notification.created once the transaction has committed (no outbox: docs/NOTIFICATIONS.md
 *    "Emission").
 *
 * Two statements, not one: a statement reads the snapshot taken when it starts, before its lock
 * waits, so the write (which reads tombstones, the rows it may replace and the unread items) must
 * start after the locks are held, or it would miss what the holder it waited for committed
 * (docs/NOTIFICATIONS.md "The batch transaction, step by step").
 *
 * The order of the steps is the lock order every writer of a user's inbox follows: the counter row
 * first, then notification rows. Rows are locked in sorted order, so two concurrent batches never
 * wait on each other in a cycle.
 */

/** The Postgres NOTIFY channel the SSE hub listens on; payload: JSON array of user ids. */
export const INBOX_CHANNEL = 'notification_inbox';

/** A planned notification once preferences decided its channels. */
export interface NotificationRow extends PlannedNotification {
  /** Chosen by the service, not the database, so notification.created can be built before the insert. */
  id: string;
  inApp: boolean;
  emailChannel: EmailChannel;
  /** Whether push-service pushes it (notification.created `push`; not stored here). */
  push: boolean;
  /** Created in the user's quiet hours, which end then (notification.created `quietUntil`). */
  quietUntil?: string;
  sourceEventId: string;
  /** The source event's correlation id, stored for notification.created. */
  correlationId: string;
}

/** What the handler needs back of each written row (outcomes and metrics). */
export interface WrittenRow {
  sourceEventId: string;
  type: NotificationType;
  inApp: boolean;
  /**
   * false: an existing lower-ranked notification of the same slot was replaced (an upgrade);
   * null: not written, a retraction of one of its subjects came first (docs/NOTIFICATIONS.md).
   */
  inserted: boolean | null;
  userId: string;
  /** The row's group now (null: ungrouped) and, for a replaced row, the group it left. */
  groupKey: string | null;
  oldGroupKey: string | null;
  /** The row's id (null when not written) and created_at: with the input row, its notification.created. */
  id: string | null;
  createdAt: Date | null;
}

export interface LockedInbox {
  /** The inbox version rows inserted in this transaction carry. */
  version: number;
  preferences: StoredPreference[];
  /** The user's quiet hours (docs/NOTIFICATIONS.md "Delivery timing"); null: none. */
  quietHours: QuietHours | null;
  /** The user's IANA time zone from user.upserted; null: none known (UTC). */
  timezone: string | null;
  /** The occurredAt of the user.upserted the projection holds (null: none): a batch's own upsert wins only if newer. */
  userOccurredAt: string | null;
}

export interface ClaimedAndLocked {
  /** The event ids claimed now (libs/idempotency's inbox): only these may have effects. */
  fresh: Set<string>;
  inboxes: Map<string, LockedInbox>;
}

/**
 * In one statement: claims the events in the inbox (processed_events), locks each recipient's
 * counter row (creating it if needed), advances their inbox version and reads their stored
 * preferences, their quiet hours (on the counter row) and their time zone (notification_users). Rows are locked in user-id order, the order every writer uses, so concurrent batches
 * never deadlock on each other.
 *
 * `userIds` are the recipients of every planned notification, a redelivered event's too (whether
 * it is one is only known from this very statement): locking a recipient who then gets nothing only
 * advances their version, which is harmless.
 */
export async function claimAndLockInboxes(
  tx: PoolClient,
  consumer: string,
  eventIds: string[],
  userIds: string[],
): Promise<ClaimedAndLocked> {
  const res = await tx.query<{
    claimed: string | null;
    user_id: string | null;
    version: string | null;
    type: string | null;
    in_app: boolean | null;
    email: string | null;
    push: boolean | null;
    quiet_start: string | null;
    quiet_end: string | null;
    timezone: string | null;
    user_occurred_at: Date | null;
  }>({
    // Named: prepared once per connection, planned once, not parsed again for every batch.
    name: 'ns-claim-and-lock',
    ...textAndValues(sql`WITH claimed AS (${inboxClaim(consumer, eventIds)}),
           -- The retraction lock, shared, before the counter locks (the InitPlan below runs first):
           -- a retraction (exclusive) is never between this batch's tombstone check and its commit
           -- (store/retraction.ts).
           guard AS (SELECT pg_advisory_xact_lock_shared(${RETRACTION_LOCK_KEY.toString()}::int8)),
           locked AS (
             INSERT INTO notification_counters AS c (user_id, version)
             SELECT u, 1 FROM unnest(${[...new Set(userIds)]}::text[]) AS t(u)
             WHERE EXISTS (SELECT 1 FROM guard) ORDER BY u
             ON CONFLICT (user_id) DO UPDATE SET version = c.version + 1, updated_at = now()
             RETURNING c.user_id, c.version, c.quiet_start, c.quiet_end
           )
           SELECT event_id AS claimed, NULL AS user_id, NULL::int8 AS version, NULL AS type, NULL::bool AS in_app, NULL AS email, NULL::bool AS push,
                  NULL AS quiet_start, NULL AS quiet_end, NULL AS timezone, NULL::timestamptz AS user_occurred_at FROM claimed
           UNION ALL
           SELECT NULL, l.user_id, l.version, p.type, p.in_app, p.email, p.push,
                  l.quiet_start, l.quiet_end, u.timezone, u.source_occurred_at
           FROM locked l LEFT JOIN notification_preferences p ON p.user_id = l.user_id
                         LEFT JOIN notification_users u ON u.user_id = l.user_id`),
  });
  const fresh = new Set<string>();
  const inboxes = new Map<string, LockedInbox>();
  for (const r of res.rows) {
    if (r.claimed !== null) {
      fresh.add(r.claimed);
      continue;
    }
    const userId = r.user_id as string;
    let inbox = inboxes.get(userId);
    if (!inbox)
      inboxes.set(
        userId,
        (inbox = {
          version: Number(r.version),
          preferences: [],
          quietHours:
            r.quiet_start !== null && r.quiet_end !== null ? { start: r.quiet_start, end: r.quiet_end } : null,
          timezone: r.timezone,
          userOccurredAt: r.user_occurred_at?.toISOString() ?? null,
        }),
      );
    if (r.type !== null)
      inbox.preferences.push({ type: r.type, inApp: r.in_app === true, email: r.email ?? '', push: r.push });
  }
  return { fresh, inboxes };
}

/** The Postgres NOTIFY payload limit is 8000 bytes; JSON escaping can double an id's length. */
export const NOTIFY_CHUNK_BYTES = 3500;

/**
 * One `pg_notify(INBOX_CHANNEL, '["user-1", ...]')` per chunk of the distinct `user_id`s of
 * `changedUsers` (a FROM clause), each payload within NOTIFY_CHUNK_BYTES: ids are grouped by a
 * running total of their worst-case JSON size. The one chunking rule of every writer of an inbox
 * (the consumers' batch, the read-state changes and the counter repair, store/counter-repair.ts).
 */
export function notifyInboxesSql(changedUsers: Sql): Sql {
  return sql`SELECT pg_notify(${INBOX_CHANNEL}::text, json_agg(user_id)::text) FROM (
         SELECT user_id, sum(2 * octet_length(user_id) + 4) OVER (ORDER BY user_id) / ${NOTIFY_CHUNK_BYTES}::int AS chunk
         FROM (SELECT DISTINCT user_id FROM ${changedUsers}) AS changed
       ) AS chunks GROUP BY chunk`;
}

/** A sql-template-tag statement as node-postgres' `text` and `values` (to go beside a `name`). */
export const textAndValues = (statement: Sql): { text: string; values: unknown[] } => ({
  text: statement.text,
  values: statement.values,
});

/**
 * Inserts the notifications, adds the inserted in-app ones to their users' unread counters and
 * announces the changed inboxes, in ONE statement: the counter cannot change without the rows it
 * counts, and the NOTIFY (delivered at commit, dropped on rollback) goes with them. It returns the
 * rows written, from which the handler builds each one's notification.created and publishes it
 * after the commit.
 *
 * ON CONFLICT on the slot: a duplicate (same business key, whatever its event id) inserts nothing
 * and publishes nothing. A higher-ranked notification of the same slot (a mention after a reply)
 * REPLACES the row: every column becomes what the higher-ranked one would have inserted had it
 * arrived first (its id, its in-app flag and email channel from its own preferences, unread, the
 * new inbox version), the counter moves by the difference (the old row counted if it was in-app
 * and unread, the new one if in-app), and it gets its own notification.created. Otherwise a
 * mention arriving after a read or hidden reply would be silent: no email, nothing to see.
 * `existing` reads the replaced rows as they were: a CTE sees the statement's snapshot, and the
 * counter locks taken in claimAndLockInboxes keep every other writer of these inboxes out.
 */
export async function writeNotifications(
  tx: PoolClient,
  rows: NotificationRow[],
  inboxes: Map<string, LockedInbox>,
): Promise<{
  written: WrittenRow[];
  /**
   * The unread items, before this statement, of the users whose items it may move rather than add
   * to: those with a grouped row in the batch, or with a row a higher rank may replace. Read by the
   * statement itself (its snapshot is the state before its own writes, taken after the counter
   * locks), for the caller's item delta; empty for a batch of fresh ungrouped rows.
   */
  before: Map<string, number>;
}> {
  if (rows.length === 0) return { written: [], before: new Map() };
  const input = rows.map((r) => ({
    user_id: r.userId,
    type: r.type,
    idempotency_key: r.idempotencyKey,
    slot_key: r.slotKey,
    slot_rank: r.slotRank,
    actor_id: r.actorId ?? null,
    resource_type: r.resourceType,
    resource_id: r.resourceId,
    excerpt: r.excerpt ?? null,
    in_app: r.inApp,
    email_channel: r.emailChannel,
    source_event_id: r.sourceEventId,
    version: inboxes.get(r.userId)?.version ?? null,
    id: r.id,
    subjects: r.subjects,
    group_key: r.groupKey ?? null,
    occurred_at: r.occurredAt ?? null,
    push: r.push,
    quiet_until: r.quietUntil ?? null,
    correlation_id: r.correlationId,
  }));
  const res = await tx.query<{
    source_event_id: string;
    type: NotificationType;
    in_app: boolean;
    inserted: boolean | null;
    user_id: string;
    group_key: string | null;
    old_group_key: string | null;
    id: string | null;
    created_at: Date | null;
    before: Record<string, number> | null;
  }>({
    name: 'ns-write-notifications',
    ...textAndValues(sql`WITH input AS (
       -- The batch's rows as one JSON document (one parameter, serialised natively by JSON.stringify,
       -- parsed once by PostgreSQL) rather than twenty arrays that node-postgres escapes element by
       -- element in JavaScript (docs/BENCHMARKS.md).
       SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
         AS r(user_id text, type text, idempotency_key text, slot_key text, slot_rank int2, actor_id text,
              resource_type text, resource_id text, excerpt text, in_app bool, email_channel text,
              source_event_id text, version int8, id uuid, subjects text[], group_key text,
              occurred_at timestamptz, push bool, quiet_until timestamptz, correlation_id text)
     ),
     retracted AS (
       -- A retraction of one of its subjects came first (a tombstone): the row is never written.
       SELECT s.source_event_id, s.type, s.in_app, s.slot_key, s.user_id FROM input s
       WHERE EXISTS (SELECT 1 FROM notification_retractions t WHERE t.subject = ANY (s.subjects))
     ),
     existing AS (
       -- The rows a higher rank may replace, as they were before this statement.
       SELECT n.slot_key, n.in_app AS was_in_app, n.group_key AS old_group_key,
              (n.in_app AND n.item_head AND n.item_unread) AS was_counted
       FROM notification_items n JOIN input i ON i.slot_key = n.slot_key
       -- Probes the slot index by construction: jsonb_to_recordset is estimated at 100 rows
       -- whatever the batch holds, and with statistics a growing table has outrun (a fresh
       -- deployment, a burst) the join above was planned as a scan of the whole table
       -- (docs/BENCHMARKS.md, 2026-12-07).
       WHERE n.slot_key = ANY (ARRAY(SELECT slot_key FROM input))
     ),
     written AS (
       INSERT INTO notification_items AS n (id, user_id, type, idempotency_key, slot_key, slot_rank, actor_id, resource_type,
              resource_id, excerpt, in_app, email_channel, source_event_id, created_version, state_version, subjects,
              group_key, occurred_at, item_version, item_actors, item_actor_count, push, quiet_until, correlation_id)
       SELECT id, user_id, type, idempotency_key, slot_key, slot_rank, actor_id, resource_type, resource_id, excerpt,
              in_app, email_channel, source_event_id, version, version, subjects,
              group_key, occurred_at, version, array_remove(ARRAY[actor_id], NULL), (actor_id IS NOT NULL)::int,
              push, quiet_until, correlation_id
       FROM input s WHERE s.slot_key NOT IN (SELECT slot_key FROM retracted) ORDER BY slot_key
       ON CONFLICT (slot_key) DO UPDATE
         SET id = EXCLUDED.id, type = EXCLUDED.type, idempotency_key = EXCLUDED.idempotency_key, slot_rank = EXCLUDED.slot_rank,
             actor_id = EXCLUDED.actor_id, resource_type = EXCLUDED.resource_type, resource_id = EXCLUDED.resource_id,
             excerpt = EXCLUDED.excerpt, in_app = EXCLUDED.in_app, email_channel = EXCLUDED.email_channel,
             source_event_id = EXCLUDED.source_event_id, created_at = now(), read_at = NULL,
             created_version = EXCLUDED.created_version, state_version = EXCLUDED.state_version,
             subjects = EXCLUDED.subjects, group_key = EXCLUDED.group_key, occurred_at = EXCLUDED.occurred_at,
             item_head = true, item_version = EXCLUDED.item_version, item_count = 1, item_actors = EXCLUDED.item_actors,
             item_actor_count = EXCLUDED.item_actor_count, item_unread = true,
             push = EXCLUDED.push, quiet_until = EXCLUDED.quiet_until, correlation_id = EXCLUDED.correlation_id
         WHERE n.slot_rank < EXCLUDED.slot_rank AND n.withdrawn_at IS NULL
       RETURNING n.id, n.user_id, n.slot_key, n.type, n.in_app, n.source_event_id, n.group_key, n.created_at,
                 (n.xmax = 0) AS inserted
     ),
     changed AS (
       -- The inbox change of each written row: +1 for a new ungrouped in-app row, its own unread item.
       -- A grouped row or a replaced one changes an item the caller refreshes and recounts (store/items.ts).
       SELECT w.user_id, w.in_app OR coalesce(e.was_in_app, false) AS visible,
              CASE WHEN w.inserted AND w.group_key IS NULL THEN w.in_app::int ELSE 0 END AS delta
       FROM written w LEFT JOIN existing e ON e.slot_key = w.slot_key
     ),
     counted AS (
       UPDATE notification_counters AS c SET unread_count = c.unread_count + d.added
       FROM (SELECT user_id, sum(delta)::int AS added FROM changed GROUP BY user_id HAVING sum(delta) <> 0) AS d
       WHERE c.user_id = d.user_id AND c.user_id = ANY (ARRAY(SELECT user_id FROM changed)) -- the primary key, probed (as above)
       RETURNING 1
     ),
     notified AS (
       -- One NOTIFY per chunk of changed in-app inboxes (none when nothing changed).
       ${notifyInboxesSql(raw('changed WHERE visible'))}
     ),
     before_items AS (
       -- The unread items before this statement of the users whose items may move (the result's before).
       ${unreadItemsSql(
         raw(`(SELECT user_id FROM input WHERE group_key IS NOT NULL
               UNION SELECT i.user_id FROM existing e JOIN input i ON i.slot_key = e.slot_key) AS u`),
       )}
     )
     SELECT w.source_event_id, w.type, w.in_app, w.inserted, w.user_id, w.group_key, e.old_group_key, w.id, w.created_at,
            NULL::json AS before
     FROM written w LEFT JOIN existing e ON e.slot_key = w.slot_key, (SELECT count(*) FROM notified) AS announce
     UNION ALL
     SELECT source_event_id, type, in_app, NULL, user_id, NULL, NULL, NULL, NULL, NULL FROM retracted
     UNION ALL
     -- One row more, only when some items may move: those users' unread items before.
     SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, json_object_agg(user_id, unread)
     FROM before_items HAVING count(*) > 0`),
  });
  const before = res.rows.find((r) => r.before !== null)?.before ?? {};
  const written = res.rows
    .filter((r) => r.before === null)
    .map((r) => ({
      sourceEventId: r.source_event_id,
      type: r.type,
      inApp: r.in_app,
      inserted: r.inserted,
      userId: r.user_id,
      groupKey: r.group_key,
      oldGroupKey: r.inserted === false ? r.old_group_key : null,
      id: r.id,
      createdAt: r.created_at,
    }));
  return { written, before: new Map(Object.entries(before)) };
}

export interface UserUpsert {
  userId: string;
  displayName: string;
  locale?: string;
  /** IANA name; absent: the user's previous time zone stays. */
  timezone?: string;
  occurredAt: string;
}

/**
 * The display-name (and time-zone) projection; last write wins on occurredAt, so a late older event
 * changes nothing. An upsert without a time zone keeps the one before it (the field is optional in
 * the contract: a producer that does not know it must not reset it to UTC).
 */
export async function upsertUsers(tx: PoolClient, users: UserUpsert[]): Promise<void> {
  // One row per user (ON CONFLICT DO UPDATE may not touch a row twice): the newest event wins.
  const newest = new Map<string, UserUpsert>();
  for (const u of users) {
    const seen = newest.get(u.userId);
    if (!seen || Date.parse(u.occurredAt) >= Date.parse(seen.occurredAt)) newest.set(u.userId, u);
  }
  // The time zone of the newest upsert that carries one (one without keeps the previous one).
  const zones = newestTimezones(users);
  const list = [...newest.values()].map((u) => ({ ...u, timezone: zones.get(u.userId)?.timezone }));
  if (list.length === 0) return;
  await tx.query(
    `INSERT INTO notification_users AS u (user_id, display_name, locale, source_occurred_at, timezone)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[]) ORDER BY 1
     ON CONFLICT (user_id) DO UPDATE
       SET display_name = EXCLUDED.display_name, locale = EXCLUDED.locale,
           timezone = coalesce(EXCLUDED.timezone, u.timezone),
           source_occurred_at = EXCLUDED.source_occurred_at, updated_at = now()
       WHERE u.source_occurred_at <= EXCLUDED.source_occurred_at`,
    [
      list.map((u) => u.userId),
      list.map((u) => u.displayName),
      list.map((u) => u.locale ?? null),
      list.map((u) => u.occurredAt),
      list.map((u) => u.timezone ?? null),
    ],
  );
}

/** Per user, the time zone of the newest of `users` that carries one, and that upsert's occurredAt. */
export function newestTimezones(users: readonly UserUpsert[]): Map<string, { timezone: string; occurredAt: string }> {
  const zones = new Map<string, { timezone: string; occurredAt: string }>();
  for (const u of users) {
    if (u.timezone === undefined) continue;
    const seen = zones.get(u.userId);
    if (!seen || Date.parse(u.occurredAt) >= Date.parse(seen.occurredAt))
      zones.set(u.userId, { timezone: u.timezone, occurredAt: u.occurredAt });
  }
  return zones;
}

/**
 * Tells every replica's SSE hub which inboxes changed (the read-state path; the consumers' batch
 * sends its NOTIFY from inside writeNotifications). NOTIFY is transactional: it is delivered
 * at commit and dropped on rollback, so a stream never shows a change that did not happen.
 */
export async function notifyInboxes(tx: PoolClient, userIds: Iterable<string>): Promise<void> {
  const statement = notifyInboxesSql(sql`unnest(${[...userIds]}::text[]) AS u(user_id)`);
  await tx.query(statement.text, statement.values);
}
