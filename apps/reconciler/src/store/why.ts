import type { Pool } from 'pg';
import { planNotifications, validate } from '@community/contracts';
import { managementRequest, type ManagementTarget } from '@community/messaging';
import type { WhyFacts, WhyTarget } from '../domain/facts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * Whether an event (its envelope as published, or a dead letter's body) is the asked user's
 * business, so that "why" may say anything about it. Every part of the answer is scoped to the
 * user: a comment's events also notify other users (its mentions, the post's author), and an
 * idempotency key or an event id can be anybody's.
 *
 * - An event the contract accepts is the user's when the planning rule (the very function
 *   notification-service decides with) makes them a recipient, or they are its actor (author,
 *   follower): "you are the actor" is the explanation then.
 * - An event the contract refuses has no recipient anyone can decide: it is the user's when one of
 *   its data fields names them, or when it was asked for by its exact id (`eventId`): the caller
 *   already holds the id, and what the answer shows of it is the contract's reason, not its data.
 */
export function concernsUser(payload: unknown, userId: string, askedById: boolean): boolean {
  const checked = validate(payload);
  if (checked.ok) {
    if ((planNotifications(checked.event) ?? []).some((p) => p.userId === userId)) return true;
    const data = checked.event.data as Record<string, unknown>;
    return [data.actorId, data.authorId, data.followerId, data.userId].includes(userId);
  }
  if (askedById) return true;
  const data = (payload as { data?: unknown } | null)?.data;
  if (data === null || typeof data !== 'object') return false;
  return Object.values(data as Record<string, unknown>).some(
    (v) => v === userId || (Array.isArray(v) && v.includes(userId)),
  );
}

/** The envelope in a stored body (bytes of JSON), or undefined. */
function envelopeOf(body: Buffer | string): unknown {
  try {
    return JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : body);
  } catch {
    return undefined;
  }
}

export async function gatherWhy(
  pool: Pool,
  management: ManagementTarget,
  dlqQueues: readonly string[],
  t: WhyTarget,
): Promise<WhyFacts> {
  // The source events: by id, or every event about the comment (mention, comment.created), then
  // only those that concern this user (concernsUser).
  const found = await pool.query<{
    event_id: string;
    producer: string;
    payload: unknown;
    created_at: Date;
    sent_at: Date | null;
  }>(
    `SELECT event_id::text, producer, payload, created_at, sent_at FROM outbox_messages
      WHERE event_type <> 'notification.created'
        AND (($1::text IS NOT NULL AND event_id::text = $1) OR ($2::text IS NOT NULL AND payload->'data'->>'commentId' = $2))
      ORDER BY id LIMIT 20`,
    [t.eventId ?? null, t.commentId ?? null],
  );
  const events = { rows: found.rows.filter((e) => concernsUser(e.payload, t.userId, e.event_id === t.eventId)) };
  const items = await pool.query<{
    id: string;
    type: string;
    idempotency_key: string;
    in_app: boolean;
    email_channel: string;
    source_event_id: string;
    created_at: Date;
    read_at: Date | null;
  }>(
    `SELECT id::text, type, idempotency_key, in_app, email_channel, source_event_id, created_at, read_at FROM notification_items
      WHERE user_id = $1 AND ((source_event_id = ANY($2::text[])) OR idempotency_key = $3 OR (resource_type = 'comment' AND resource_id = $4))`,
    [
      t.userId,
      [...events.rows.map((e) => e.event_id), ...(t.eventId ? [t.eventId] : [])],
      t.idempotencyKey ?? null,
      t.commentId ?? null,
    ],
  );
  // The asked event id itself only when it is the user's (above, or one of their notifications),
  // or when no outbox holds it any more: then only its dead letters can tell, and they are scoped
  // by their own bodies (deadLetters).
  const outboxHasIt = t.eventId !== undefined && found.rows.some((e) => e.event_id === t.eventId);
  const eventIds = [
    ...new Set([
      ...events.rows.map((e) => e.event_id),
      ...items.rows.map((i) => i.source_event_id),
      ...(t.eventId && !outboxHasIt ? [t.eventId] : []),
    ]),
  ];
  const ownEventIds = new Set([...events.rows.map((e) => e.event_id), ...items.rows.map((i) => i.source_event_id)]);
  const keys = [
    ...new Set([...items.rows.map((i) => i.idempotency_key), ...(t.idempotencyKey ? [t.idempotencyKey] : [])]),
  ];
  const [inbox, prefs, created, deliveries, digest, emailUser, suppressions] = await Promise.all([
    pool.query<{ consumer: string; event_id: string; processed_at: Date }>(
      'SELECT consumer, event_id, processed_at FROM processed_events WHERE event_id = ANY($1::text[]) ORDER BY processed_at',
      [eventIds],
    ),
    pool.query<{ type: string; in_app: boolean; email: string }>(
      'SELECT type, in_app, email FROM notification_preferences WHERE user_id = $1',
      [t.userId],
    ),
    pool.query<{ event_id: string; key: string; sent_at: Date | null }>(
      `SELECT event_id::text, payload->'data'->>'idempotencyKey' AS key, sent_at FROM outbox_messages
        WHERE producer = 'notification-service' AND aggregate_id = $1 AND event_type = 'notification.created' AND payload->'data'->>'idempotencyKey' = ANY($2::text[])`,
      [t.userId, keys],
    ),
    pool.query<{
      idempotency_key: string;
      channel: string;
      state: string;
      attempts: number;
      last_error: string | null;
      smtp_response: string | null;
      sent_at: Date | null;
    }>(
      `SELECT d.idempotency_key, d.channel::text, d.state::text, d.attempts, d.last_error, d.smtp_response, d.sent_at FROM email_deliveries d
        WHERE d.idempotency_key = ANY($1::text[]) AND d.user_id = $2`,
      [keys, t.userId],
    ),
    pool.query<{ idempotency_key: string; status: string; window_end: Date; window_id: string }>(
      `SELECT i.idempotency_key, w.status::text, w.window_end, w.id::text AS window_id FROM email_digest_items i JOIN email_digest_windows w ON w.id = i.window_id
        WHERE i.idempotency_key = ANY($1::text[]) AND i.user_id = $2 AND w.user_id = $2`,
      [keys, t.userId],
    ),
    pool.query('SELECT 1 FROM email_users WHERE user_id = $1', [t.userId]),
    pool.query<{ scope: string }>('SELECT scope FROM email_suppressions WHERE user_id = $1', [t.userId]),
  ]);
  const createdIds = created.rows.map((c) => c.event_id);
  // A dead letter is shown when it is one of the user's own messages (their events, their
  // notification.created), or its body concerns them.
  const own = new Set([...ownEventIds, ...createdIds]);
  const mine = (id: string, body: Buffer | string) =>
    own.has(id) || concernsUser(envelopeOf(body), t.userId, id === t.eventId);
  const { dead, source } = await deadLetters(pool, management, dlqQueues, [...eventIds, ...createdIds], mine);
  return {
    events: events.rows.map((e) => ({
      eventId: e.event_id,
      producer: e.producer,
      payload: e.payload,
      createdAt: e.created_at.toISOString(),
      sentAt: iso(e.sent_at),
    })),
    inbox: inbox.rows.map((r) => ({
      consumer: r.consumer,
      eventId: r.event_id,
      processedAt: r.processed_at.toISOString(),
    })),
    items: items.rows.map((i) => ({
      id: i.id,
      type: i.type,
      idempotencyKey: i.idempotency_key,
      inApp: i.in_app,
      emailChannel: i.email_channel,
      sourceEventId: i.source_event_id,
      createdAt: i.created_at.toISOString(),
      readAt: iso(i.read_at),
    })),
    preferences: prefs.rows.map((p) => ({ type: p.type, inApp: p.in_app, email: p.email })),
    created: created.rows.map((c) => ({ eventId: c.event_id, idempotencyKey: c.key, sentAt: iso(c.sent_at) })),
    deliveries: deliveries.rows.map((d) => ({
      idempotencyKey: d.idempotency_key,
      channel: d.channel,
      state: d.state,
      attempts: d.attempts,
      lastError: d.last_error,
      smtpResponse: d.smtp_response,
      sentAt: iso(d.sent_at),
    })),
    digestItems: digest.rows.map((d) => ({
      idempotencyKey: d.idempotency_key,
      windowStatus: d.status,
      windowEnd: d.window_end.toISOString(),
    })),
    emailUser: (emailUser.rowCount ?? 0) > 0,
    suppressions: suppressions.rows.map((s) => s.scope),
    dead,
    dlqSource: source,
  };
}

/**
 * Dead letters of these message ids: from the DLQ console's table (dlq_messages) when this database
 * has it (the console moves every DLQ into it), otherwise by peeking the broker's DLQs through the
 * management API (requeued at once, so nothing moves; each peek counts toward the DLQ's delivery
 * limit, which DLQ_DELIVERY_LIMIT of libs/messaging sets far above what peeks reach).
 */
async function deadLetters(
  pool: Pool,
  management: ManagementTarget,
  dlqQueues: readonly string[],
  ids: string[],
  mine: (messageId: string, body: Buffer | string) => boolean,
): Promise<{ dead: WhyFacts['dead']; source: string }> {
  if (ids.length === 0) return { dead: [], source: 'none looked up' };
  const table = await pool.query<{ t: string | null }>("SELECT to_regclass('dlq_messages')::text AS t");
  const dead: WhyFacts['dead'] = [];
  if (table.rows[0].t) {
    const res = await pool.query<{
      queue: string;
      message_id: string;
      error_class: string;
      error_message: string;
      error_kind: string;
      dead_lettered_at: Date;
      body: Buffer;
    }>(
      'SELECT queue, message_id, error_class, error_message, error_kind, dead_lettered_at, body FROM dlq_messages WHERE message_id = ANY($1::text[]) ORDER BY dead_lettered_at',
      [ids],
    );
    for (const r of res.rows)
      if (mine(r.message_id, r.body))
        dead.push({
          queue: r.queue,
          messageId: r.message_id,
          cause: `${r.error_kind}: ${r.error_class}: ${r.error_message}`,
          at: r.dead_lettered_at.toISOString(),
        });
  }
  for (const queue of dlqQueues) {
    const res = await managementRequest(
      management,
      'POST',
      `/queues/${encodeURIComponent(management.vhost)}/${encodeURIComponent(queue)}/get`,
      {
        count: 500,
        ackmode: 'reject_requeue_true',
        encoding: 'auto',
      },
    ).catch(() => undefined);
    if (!res?.ok) continue;
    const messages = (await res.json()) as {
      payload?: string;
      payload_encoding?: string;
      properties?: { message_id?: string; headers?: Record<string, unknown> };
    }[];
    for (const m of messages) {
      const id = m.properties?.message_id;
      if (!id || !ids.includes(id) || dead.some((d) => d.messageId === id && d.queue === queue)) continue;
      const body = m.payload_encoding === 'base64' ? Buffer.from(m.payload ?? '', 'base64') : (m.payload ?? '');
      if (!mine(id, body)) continue;
      const h = m.properties?.headers ?? {};
      const cause =
        [h['x-error-kind'], h['x-error-class'] ?? h['x-error-code'], h['x-error-message']]
          .filter((x) => x !== undefined)
          .join(': ') || 'dead-lettered by the broker';
      const at = typeof h['x-dead-lettered-at'] === 'string' ? (h['x-dead-lettered-at'] as string) : null;
      dead.push({ queue, messageId: id, cause, at });
    }
  }
  return { dead, source: table.rows[0].t ? 'dlq_messages (DLQ console) and the broker DLQs' : 'the broker DLQs' };
}
