import { createHash } from 'node:crypto';
import pg from 'pg';
import type { ReceivedMail } from '../harness';
import { EVENT_TYPES, type EventType, type Ledger } from './load';

/**
 * The invariants of issue 8 over everything the ledger holds so far, and the helpers that read the
 * system's state for them: queue depths and DLQ contents from the private broker's management API,
 * the outbox and notification rows from the database, the mails from the SMTP sink.
 */
export interface Management {
  url: string;
  vhost: string;
}

async function mgmt<T>(m: Management, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${m.url}/api${path}`, {
    method,
    headers: {
      authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(60_000),
  });
  if (!res.ok) throw new Error(`management ${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export interface BrokerMessage {
  queue: string;
  messageId: string | undefined;
  type: string | undefined;
  /** Why it was dead-lettered: the runtime's x-error-kind/x-error-message, or the broker's x-death reason. */
  reason: string | undefined;
  body: string;
}

/** Up to `count` messages of a queue through the management API, left where they were (the DLQs are read, not emptied). */
export async function readQueue(m: Management, queue: string, count: number): Promise<BrokerMessage[]> {
  if (count <= 0) return [];
  const rows = await mgmt<
    Array<{ payload: string; properties: { message_id?: string; type?: string; headers?: Record<string, unknown> } }>
  >(m, 'POST', `/queues/${encodeURIComponent(m.vhost)}/${encodeURIComponent(queue)}/get`, {
    count,
    ackmode: 'reject_requeue_true',
    encoding: 'auto',
    truncate: 100_000,
  });
  return rows.map((r) => {
    const h = r.properties.headers ?? {};
    const death = Array.isArray(h['x-death']) ? (h['x-death'] as Array<{ reason?: string }>)[0]?.reason : undefined;
    const reason = h['x-error-kind']
      ? `${String(h['x-error-kind'])}: ${String(h['x-error-message'] ?? '')}`
      : (death ?? (h['x-first-death-reason'] as string | undefined));
    return { queue, messageId: r.properties.message_id, type: r.properties.type, reason, body: r.payload };
  });
}

/**
 * Every queue of the vhost with its depth (ready + unacked) from the management API: cheap, but its
 * statistics are up to `collect_statistics_interval` (1 s on the private node) old. A queue whose
 * statistics are not there (no `messages` field: a queue just declared, or recovering after
 * start_app) has depth NaN: unknown, which the drain treats as busy, never as empty.
 */
export async function queueDepthsFast(m: Management): Promise<Map<string, number>> {
  const rows = await mgmt<Array<{ name: string; messages?: number }>>(
    m,
    'GET',
    `/queues/${encodeURIComponent(m.vhost)}?columns=name,messages`,
  );
  return new Map(rows.map((r) => [r.name, typeof r.messages === 'number' ? r.messages : NaN]));
}

/**
 * Every queue of the vhost with its depth (ready + unacked), exact (`rabbitmqctl list_queues`; an
 * Erlang VM start each call). A queue whose `messages` column is empty or not a number (a quorum
 * queue whose leader is still being elected after start_app prints nothing there) has depth NaN.
 */
export async function queueDepths(
  ctl: (...args: string[]) => Promise<string>,
  vhost: string,
): Promise<Map<string, number>> {
  const stdout = await ctl('list_queues', '-q', '--no-table-headers', '-p', vhost, 'name', 'messages');
  const depths = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const [name, n] = line.trim().split(/\s+/);
    if (name) depths.set(name, n !== undefined && /^\d+$/.test(n) ? Number(n) : NaN);
  }
  return depths;
}

/** Outbox rows not yet relayed, email deliveries not yet final, feed fan-outs (jobs or chunks) not done. */
export async function pendingWork(db: pg.Pool): Promise<{ outbox: number; emails: number; fanouts: number }> {
  const { rows } = await db.query<{ outbox: number; emails: number; fanouts: number }>(`SELECT
      (SELECT count(*)::int FROM outbox_messages WHERE sent_at IS NULL) AS outbox,
      (SELECT count(*)::int FROM email_deliveries WHERE state IN ('pending', 'sending')) AS emails,
      (SELECT count(*)::int FROM feed_fanout_jobs WHERE done_at IS NULL)
        + (SELECT count(*)::int FROM feed_fanout_chunks WHERE done_at IS NULL) AS fanouts`);
  return rows[0];
}

/** The ledger key of an event, from its type and payload (load.ts uses the same keys). */
export function eventKey(type: string, data: Record<string, string>): string | undefined {
  switch (type as EventType) {
    case 'user.upserted':
      return data.userId;
    case 'post.published':
      return data.postId;
    case 'comment.created':
      return data.commentId;
    case 'user.mentioned':
      return `${data.commentId}/${data.mentionedUserId}`;
    case 'reaction.added':
      return data.reactionId;
    case 'user.followed':
    case 'user.unfollowed':
      return `${data.followerId}/${data.followeeId}`;
    case 'security.alert':
      return data.alertId;
    case 'notification.created':
      return data.idempotencyKey;
    default:
      return undefined;
  }
}

/** The Message-ID email-service gives an immediate email (docs/EMAIL.md: a function of its idempotency key). */
function immediateMessageIdPrefix(idempotencyKey: string): string {
  return `<${createHash('sha256').update(`immediate\u0000${idempotencyKey}`).digest('hex').slice(0, 40)}.immediate@`;
}

export interface Figures {
  /** Ledger events by type (cumulative). */
  events: Record<EventType, number>;
  /** Expected effects (notification rows, user rows, feed messages, emails). */
  effects: number;
  lost: number;
  /** Effects missing whose event sits in a DLQ with a reason. */
  inDlq: number;
  duplicated: number;
  /** Rows or feed events for requests the client was not told succeeded (a 201 lost with its connection). */
  unledgered: number;
  dlq: number;
  dlqUnmatched: number;
  dlqWithoutReason: number;
  emailsMissing: number;
  emailsDuplicated: number;
  emailsCrashWindow: number;
  /** Unread counters that differ from a recount of the notification rows. */
  counterMismatches: number;
  /**
   * feed-service's own counters that differ from a recount: an author's follower_count against its
   * active edges (a follow transition applied twice, or missed), a fan-out job's chunks_done against
   * its checkpointed chunks (a chunk counted twice).
   */
  feedCountersOff: number;
  /** Fan-out chunk executions beyond the first (a kill or a redelivery re-ran a chunk; harmless, skipped once checkpointed). */
  feedChunkRetries: number;
  /** A few missing effects, for the log. */
  examples: string[];
}

/**
 * Each ledger event's effect present exactly once, or its event in a DLQ with a reason; no
 * duplicate notification; one email per immediate notification at the SMTP server (a resend with
 * the same Message-ID is the documented crash window, counted apart); unread counters equal to a
 * recount. DLQ messages are matched to ledger events by message id through the outbox (event_id →
 * payload → ledger key) and, for notification.created, the notification rows (id → idempotency key).
 */
/**
 * What the check needs of feed-service besides its tables: users who follow every poster since
 * before the load, and each one's whole feed as the API pages it (post ids, newest first).
 */
export interface FeedReaders {
  readers: string[];
  readFeed(userId: string): Promise<string[]>;
}

export async function checkInvariants(
  db: pg.Pool,
  ledger: Ledger,
  mails: ReceivedMail[],
  feed: FeedReaders,
  dlqs: BrokerMessage[],
): Promise<Figures> {
  const examples: string[] = [];
  const miss = (what: string) => {
    if (examples.length < 5) examples.push(what);
  };

  // Message id → ledger event id, through the outbox of every producer (the API's events,
  // notification-service's notification.withdrawn) and the notification rows: notification.created
  // leaves without an outbox row, with the notification's id as its message id.
  const outbox = await db.query<{ event_id: string; event_type: string; payload: { data?: Record<string, string> } }>(
    'SELECT event_id, event_type, payload FROM outbox_messages',
  );
  const eventOf = new Map<string, string>();
  for (const r of outbox.rows) {
    const key = r.payload?.data ? eventKey(r.event_type, r.payload.data) : undefined;
    if (key !== undefined) eventOf.set(r.event_id, `${r.event_type}|${key}`);
  }
  const announced = await db.query<{ id: string; idempotency_key: string }>(
    'SELECT id, idempotency_key FROM notification_items',
  );
  for (const r of announced.rows) eventOf.set(r.id, `notification.created|${r.idempotency_key}`);
  const dlqByEvent = new Map<string, string>();
  let dlqUnmatched = 0;
  let dlqWithoutReason = 0;
  for (const m of dlqs) {
    const id = m.messageId ? eventOf.get(m.messageId) : undefined;
    if (!id || !ledger.events.has(id)) dlqUnmatched++;
    else dlqByEvent.set(id, m.reason ?? '');
    if (!m.reason) dlqWithoutReason++;
  }
  const dlqd = (cause: string) => dlqByEvent.has(cause);

  let effects = 0;
  let lost = 0;
  let inDlq = 0;
  let duplicated = 0;
  const account = (present: number, cause: string, what: string) => {
    effects++;
    if (present === 0) {
      if (dlqd(cause)) inDlq++;
      else {
        lost++;
        miss(what);
      }
    }
    if (present > 1) duplicated += present - 1;
  };

  // Notifications: one row per expected idempotency key (unique in the table; a second row for the
  // same fact would carry another key and show as unledgered).
  const items = await db.query<{
    idempotency_key: string;
    user_id: string;
    type: string;
    resource_id: string;
    created_at: Date;
  }>('SELECT idempotency_key, user_id, type, resource_id, created_at FROM notification_items');
  const rowsByKey = new Map<string, number>();
  for (const r of items.rows) rowsByKey.set(r.idempotency_key, (rowsByKey.get(r.idempotency_key) ?? 0) + 1);
  for (const n of ledger.notifications.values()) account(rowsByKey.get(n.key) ?? 0, n.cause, `notification ${n.key}`);
  // (The set-up's follows, before the ledger started, notify the posters: not the load's.)
  const unledgeredRows = items.rows.filter(
    (r) => !ledger.notifications.has(r.idempotency_key) && r.created_at >= ledger.startedAt,
  );
  let unledgered = unledgeredRows.length;
  // The same fact notified twice under two keys: one user, one type, one resource, two rows (each
  // round's facts have resources of their own, so the load never asks for that legitimately).
  const facts = new Map<string, number>();
  for (const r of items.rows) {
    const f = `${r.user_id}|${r.type}|${r.resource_id}`;
    facts.set(f, (facts.get(f) ?? 0) + 1);
  }
  for (const n of facts.values()) if (n > 1) duplicated += n - 1;

  // Users: known to both services that keep a copy.
  const users = await db.query<{ user_id: string; n: number }>(
    `SELECT user_id, count(*)::int AS n FROM (SELECT user_id FROM notification_users UNION ALL SELECT user_id FROM email_users) u WHERE user_id = ANY($1) GROUP BY user_id`,
    [[...ledger.users]],
  );
  const userRows = new Map(users.rows.map((r) => [r.user_id, r.n]));
  for (const u of ledger.users) {
    effects++;
    const n = userRows.get(u) ?? 0;
    if (n < 2) {
      if (dlqd(`user.upserted|${u}`)) inDlq++;
      else {
        lost++;
        miss(`user ${u} known to ${n} of 2 services`);
      }
    }
  }

  // Feed (feed-service's projections, docs/FEED.md): each ledger post.published recorded once in
  // feed_posts; each ledger follow edge once in feed_follows, in the state the ledger's last
  // acknowledged request left it (followed, or unfollowed after it); then every post in the feed
  // of every reader exactly once, through the feed API.
  const feedPosts = await db.query<{ post_id: string; n: number }>(
    'SELECT post_id, count(*)::int AS n FROM feed_posts GROUP BY post_id',
  );
  const postRows = new Map(feedPosts.rows.map((r) => [r.post_id, r.n]));
  const edges = await db.query<{ edge: string; active: boolean; n: number }>(
    `SELECT follower_id || '/' || followee_id AS edge, bool_or(active) AS active, count(*)::int AS n FROM feed_follows GROUP BY 1`,
  );
  const edgeRows = new Map(edges.rows.map((r) => [r.edge, r]));
  const ledgerPosts: string[] = [];
  for (const id of ledger.feed) {
    const [type, key] = id.split('|') as [EventType, string];
    if (type === 'post.published') {
      ledgerPosts.push(key);
      account(postRows.get(key) ?? 0, id, `feed_posts row of ${key}`);
    } else if (type === 'user.followed') {
      account(edgeRows.get(key)?.n ?? 0, id, `feed_follows edge ${key}`);
    } else {
      // The unfollow's effect: the edge exists and is no longer active.
      const e = edgeRows.get(key);
      account(e && !e.active ? e.n : 0, id, `feed_follows edge ${key} inactive`);
    }
  }
  for (const [key, e] of edgeRows) {
    const expected = ledger.follows.get(key);
    // An edge the ledger does not know (a follow whose 201 was lost), or left unfollowed by an
    // unfollow whose 200 was lost: the client was not told; counted, not a breach.
    if (expected === undefined || (expected === 'followed' && !e.active)) unledgered++;
  }
  unledgered += [...postRows.keys()].filter((p) => !ledger.events.has(`post.published|${p}`)).length;

  const feedCounters = await db.query<{ n: number }>(`SELECT
      (SELECT count(*)::int FROM feed_authors a
        WHERE a.follower_count <> (SELECT count(*) FROM feed_follows f WHERE f.followee_id = a.author_id AND f.active))
      + (SELECT count(*)::int FROM feed_fanout_jobs j
        WHERE j.chunks_done <> (SELECT count(*) FROM feed_fanout_chunks c WHERE c.post_id = j.post_id AND c.done_at IS NOT NULL)
           OR j.chunks_done > j.chunks_total) AS n`);
  const chunkRetries = await db.query<{ n: number }>(
    'SELECT coalesce(sum(attempts - 1), 0)::int AS n FROM feed_fanout_chunks WHERE attempts > 1',
  );

  // Fan-out, as a reader sees it: each ledger post once in each reader's feed (all of them follow
  // every poster). A post twice in one feed is a duplicate whatever wrote it (fan-out, rebuild, merge).
  for (const reader of feed.readers) {
    const seen = new Map<string, number>();
    for (const p of await feed.readFeed(reader)) seen.set(p, (seen.get(p) ?? 0) + 1);
    for (const p of ledgerPosts) account(seen.get(p) ?? 0, `post.published|${p}`, `post ${p} in ${reader}'s feed`);
    unledgered += [...seen.keys()].filter((p) => !ledger.events.has(`post.published|${p}`)).length;
  }

  // Emails: one per immediate notification, matched by Message-ID at the SMTP server. Digests are not
  // what the load asks for but what the clock does: a daily window closes at midnight UTC, and a run
  // across it receives one digest per user with digest items (a run of 1 December counted 683 of them
  // as duplicates). A digest's Message-ID is one per window, so a digest sent twice shows as a repeat
  // of its id, counted with the crash window's resends below.
  const byMessageId = new Map<string, number>();
  let digestRepeats = 0;
  const digestIds = new Map<string, number>();
  for (const m of mails) {
    if (!m.messageId) continue;
    if (/\.digest@/.test(m.messageId)) digestIds.set(m.messageId, (digestIds.get(m.messageId) ?? 0) + 1);
    else byMessageId.set(m.messageId, (byMessageId.get(m.messageId) ?? 0) + 1);
  }
  for (const n of digestIds.values()) digestRepeats += n - 1;
  const byPrefix = new Map<string, number>();
  for (const [id, n] of byMessageId) byPrefix.set(id.slice(0, id.indexOf('@') + 1), n);
  let emailsMissing = 0;
  let emailsCrashWindow = 0;
  let matched = 0;
  for (const n of ledger.notifications.values()) {
    if (!n.immediateEmail) continue;
    effects++;
    const got = byPrefix.get(immediateMessageIdPrefix(n.key)) ?? 0;
    if (got === 0) {
      if (dlqd(n.cause) || dlqd(`notification.created|${n.key}`)) inDlq++;
      else {
        emailsMissing++;
        miss(`email for ${n.key}`);
      }
    } else {
      matched++;
      emailsCrashWindow += got - 1;
    }
  }
  // Distinct Message-IDs the ledger does not expect: a second email for one notification would carry
  // another id. An email for a notification whose request lost its 201 is unledgered, not a duplicate.
  const unledgeredIds = new Set(unledgeredRows.map((r) => immediateMessageIdPrefix(r.idempotency_key)));
  const unledgeredEmails = [...byPrefix.keys()].filter((p) => unledgeredIds.has(p)).length;
  unledgered += unledgeredEmails;
  const emailsDuplicated = byMessageId.size - matched - unledgeredEmails;

  const counters = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM notification_counters c
     WHERE c.unread_count <> (SELECT count(*) FROM notification_items i WHERE i.user_id = c.user_id AND i.in_app AND i.item_head AND i.item_unread)`);
  return {
    events: ledger.countByType(),
    effects,
    lost,
    inDlq,
    duplicated,
    unledgered,
    dlq: dlqs.length,
    dlqUnmatched,
    dlqWithoutReason,
    emailsMissing,
    emailsDuplicated,
    emailsCrashWindow: emailsCrashWindow + digestRepeats,
    counterMismatches: counters.rows[0].n,
    feedCountersOff: feedCounters.rows[0].n,
    feedChunkRetries: chunkRetries.rows[0].n,
    examples,
  };
}

export { EVENT_TYPES };
