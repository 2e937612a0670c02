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
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`, ...(body ? { 'content-type': 'application/json' } : {}) },
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

/**
 * Up to `count` messages of a queue through the management API. `reject_requeue_true` leaves them
 * where they were (the DLQs are read, not emptied); `ack_requeue_false` takes them off.
 */
export async function readQueue(m: Management, queue: string, count: number, ackmode: 'reject_requeue_true' | 'ack_requeue_false'): Promise<BrokerMessage[]> {
  if (count <= 0) return [];
  const rows = await mgmt<Array<{ payload: string; properties: { message_id?: string; type?: string; headers?: Record<string, unknown> } }>>(
    m,
    'POST',
    `/queues/${encodeURIComponent(m.vhost)}/${encodeURIComponent(queue)}/get`,
    { count, ackmode, encoding: 'auto', truncate: 100_000 },
  );
  return rows.map((r) => {
    const h = r.properties.headers ?? {};
    const death = Array.isArray(h['x-death']) ? (h['x-death'] as Array<{ reason?: string }>)[0]?.reason : undefined;
    const reason = h['x-error-kind'] ? `${String(h['x-error-kind'])}: ${String(h['x-error-message'] ?? '')}` : death ?? (h['x-first-death-reason'] as string | undefined);
    return { queue, messageId: r.properties.message_id, type: r.properties.type, reason, body: r.payload };
  });
}

/**
 * Every queue of the vhost with its depth (ready + unacked) from the management API: cheap, but its
 * statistics are up to `collect_statistics_interval` (1 s on the private node) old.
 */
export async function queueDepthsFast(m: Management): Promise<Map<string, number>> {
  const rows = await mgmt<Array<{ name: string; messages?: number }>>(m, 'GET', `/queues/${encodeURIComponent(m.vhost)}?columns=name,messages`);
  return new Map(rows.map((r) => [r.name, r.messages ?? 0]));
}

/** Every queue of the vhost with its depth (ready + unacked), exact (`rabbitmqctl list_queues`; an Erlang VM start each call). */
export async function queueDepths(ctl: (...args: string[]) => Promise<string>, vhost: string): Promise<Map<string, number>> {
  const stdout = await ctl('list_queues', '-q', '--no-table-headers', '-p', vhost, 'name', 'messages');
  const depths = new Map<string, number>();
  for (const line of stdout.split('\n')) {
    const [name, n] = line.trim().split(/\s+/);
    if (name && n !== undefined && /^\d+$/.test(n)) depths.set(name, Number(n));
  }
  return depths;
}

/** Outbox rows not yet relayed, and email deliveries not yet final. */
export async function pendingWork(db: pg.Pool): Promise<{ outbox: number; emails: number }> {
  const { rows } = await db.query<{ outbox: number; emails: number }>(`SELECT
      (SELECT count(*)::int FROM outbox_messages WHERE sent_at IS NULL) AS outbox,
      (SELECT count(*)::int FROM email_deliveries WHERE state IN ('pending', 'sending')) AS emails`);
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

function parseEvent(body: string): { type: string; data: Record<string, string> } | undefined {
  try {
    const e = JSON.parse(body) as { type?: string; data?: Record<string, string> };
    return e.type && e.data ? { type: e.type, data: e.data } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What reached feed-service.activity. No feed-service runs yet, so the suite takes the queue's
 * messages itself (acked) and keeps them: the queue drains, and each post.published / user.followed
 * / user.unfollowed of the ledger must be there. Once feed-service runs (APPS in run.ts), it
 * consumes the queue and this is not called.
 */
export class FeedTap {
  /** Ledger event id (`type|key`) → distinct message ids seen for it. */
  readonly byEvent = new Map<string, Set<string>>();
  copies = 0;

  async take(m: Management, depth: number): Promise<void> {
    for (let left = depth; left > 0; ) {
      const batch = await readQueue(m, 'feed-service.activity', Math.min(left, 5000), 'ack_requeue_false');
      if (batch.length === 0) break;
      left -= batch.length;
      for (const msg of batch) {
        const e = parseEvent(msg.body);
        const key = e && eventKey(e.type, e.data);
        if (!e || key === undefined) continue;
        const id = `${e.type}|${key}`;
        const ids = this.byEvent.get(id) ?? new Set<string>();
        if (ids.has(msg.messageId ?? '')) this.copies++;
        ids.add(msg.messageId ?? '');
        this.byEvent.set(id, ids);
      }
    }
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
  feedRedelivered: number;
  counterMismatches: number;
  /** A few missing effects, for the log. */
  examples: string[];
}

/**
 * Each ledger event's effect present exactly once, or its event in a DLQ with a reason; no
 * duplicate notification; one email per immediate notification at the SMTP server (a resend with
 * the same Message-ID is the documented crash window, counted apart); unread counters equal to a
 * recount. DLQ messages are matched to ledger events by message id through the outbox (event_id →
 * payload → ledger key).
 */
export async function checkInvariants(db: pg.Pool, ledger: Ledger, mails: ReceivedMail[], feed: FeedTap | undefined, dlqs: BrokerMessage[]): Promise<Figures> {
  const examples: string[] = [];
  const miss = (what: string) => { if (examples.length < 5) examples.push(what); };

  // Message id → ledger event id, through the outbox of every producer (API and notification-service).
  const outbox = await db.query<{ event_id: string; event_type: string; payload: { data?: Record<string, string> } }>('SELECT event_id, event_type, payload FROM outbox_messages');
  const eventOf = new Map<string, string>();
  for (const r of outbox.rows) {
    const key = r.payload?.data ? eventKey(r.event_type, r.payload.data) : undefined;
    if (key !== undefined) eventOf.set(r.event_id, `${r.event_type}|${key}`);
  }
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
  const items = await db.query<{ idempotency_key: string; user_id: string; type: string; resource_id: string }>('SELECT idempotency_key, user_id, type, resource_id FROM notification_items');
  const rowsByKey = new Map<string, number>();
  for (const r of items.rows) rowsByKey.set(r.idempotency_key, (rowsByKey.get(r.idempotency_key) ?? 0) + 1);
  for (const n of ledger.notifications.values()) account(rowsByKey.get(n.key) ?? 0, n.cause, `notification ${n.key}`);
  const unledgeredRows = items.rows.filter((r) => !ledger.notifications.has(r.idempotency_key));
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

  // Feed: each ledger event once (distinct message ids for one event would be a duplicate event;
  // the same message id twice is a redelivery, which a consumer deduplicates).
  if (feed) {
    for (const id of ledger.feed) account(feed.byEvent.get(id)?.size ?? 0, id, `feed ${id}`);
    unledgered += [...feed.byEvent.keys()].filter((id) => !ledger.events.has(id)).length;
  }

  // Emails: one per immediate notification, matched by Message-ID at the SMTP server.
  const byMessageId = new Map<string, number>();
  for (const m of mails) if (m.messageId) byMessageId.set(m.messageId, (byMessageId.get(m.messageId) ?? 0) + 1);
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
     WHERE c.unread_count <> (SELECT count(*) FROM notification_items i WHERE i.user_id = c.user_id AND i.in_app AND i.read_at IS NULL)`);
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
    emailsCrashWindow,
    feedRedelivered: feed?.copies ?? 0,
    counterMismatches: counters.rows[0].n,
    examples,
  };
}

export { EVENT_TYPES };
