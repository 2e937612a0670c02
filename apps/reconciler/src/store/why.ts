import type { Pool } from 'pg';
import { planNotifications, validate } from '@community/contracts';
import { emailFactsFor } from '@community/email-service';
import { processedEventsOf } from '@community/idempotency';
import { managementRequest, type ManagementTarget } from '@community/messaging';
import { notificationsAbout, notificationsCreated, storedPreferences } from '@community/notification-service';
import { outboxEventsAbout } from '@community/outbox';
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

/**
 * The facts of one user and one event / comment / key, from their owners' public reads (each
 * service's and lib's `index.ts`: docs/DATABASE.md "Who owns each table"); only the dead letters
 * (the reconciler's own DLQ console table, and the broker) are read here.
 */
export async function gatherWhy(
  pool: Pool,
  management: ManagementTarget,
  dlqQueues: readonly string[],
  t: WhyTarget,
): Promise<WhyFacts> {
  // The source events: by id, or every event about the comment (mention, comment.created), then
  // only those that concern this user (concernsUser).
  const found = await outboxEventsAbout(pool, {
    eventId: t.eventId,
    data: t.commentId === undefined ? undefined : { field: 'commentId', value: t.commentId },
    exceptType: 'notification.created',
    limit: 20,
  });
  const events = found.filter((e) => concernsUser(e.payload, t.userId, e.eventId === t.eventId));
  const items = await notificationsAbout(pool, {
    userId: t.userId,
    sourceEventIds: [...events.map((e) => e.eventId), ...(t.eventId ? [t.eventId] : [])],
    idempotencyKey: t.idempotencyKey,
    commentId: t.commentId,
  });
  // The asked event id itself only when it is the user's (above, or one of their notifications),
  // or when no outbox holds it any more: then only its dead letters can tell, and they are scoped
  // by their own bodies (deadLetters).
  const outboxHasIt = t.eventId !== undefined && found.some((e) => e.eventId === t.eventId);
  const eventIds = [
    ...new Set([
      ...events.map((e) => e.eventId),
      ...items.map((i) => i.sourceEventId),
      ...(t.eventId && !outboxHasIt ? [t.eventId] : []),
    ]),
  ];
  const ownEventIds = new Set([...events.map((e) => e.eventId), ...items.map((i) => i.sourceEventId)]);
  const keys = [...new Set([...items.map((i) => i.idempotencyKey), ...(t.idempotencyKey ? [t.idempotencyKey] : [])])];
  const [inbox, prefs, created, email] = await Promise.all([
    processedEventsOf(pool, eventIds),
    storedPreferences(pool, t.userId),
    notificationsCreated(pool, t.userId, keys),
    emailFactsFor(pool, t.userId, keys),
  ]);
  const createdIds = created.map((c) => c.eventId);
  // A dead letter is shown when it is one of the user's own messages (their events, their
  // notification.created), or its body concerns them.
  const own = new Set([...ownEventIds, ...createdIds]);
  const mine = (id: string, body: Buffer | string) =>
    own.has(id) || concernsUser(envelopeOf(body), t.userId, id === t.eventId);
  const { dead, source } = await deadLetters(pool, management, dlqQueues, [...eventIds, ...createdIds], mine);
  return {
    events: events.map((e) => ({
      eventId: e.eventId,
      producer: e.producer,
      payload: e.payload,
      createdAt: e.createdAt.toISOString(),
      sentAt: iso(e.sentAt),
    })),
    inbox: inbox.map((r) => ({ consumer: r.consumer, eventId: r.eventId, processedAt: r.processedAt.toISOString() })),
    items: items.map((i) => ({ ...i, createdAt: i.createdAt.toISOString(), readAt: iso(i.readAt) })),
    preferences: prefs.map((p) => ({ type: p.type, inApp: p.inApp, email: p.email })),
    created: created.map((c) => ({
      eventId: c.eventId,
      idempotencyKey: c.idempotencyKey,
      createdAt: c.createdAt.toISOString(),
      withdrawnAt: iso(c.withdrawnAt),
    })),
    deliveries: email.deliveries.map((d) => ({ ...d, sentAt: iso(d.sentAt), heldUntil: iso(d.heldUntil ?? null) })),
    digestItems: email.digestItems.map((d) => ({
      idempotencyKey: d.idempotencyKey,
      windowStatus: d.windowStatus,
      windowEnd: d.windowEnd.toISOString(),
    })),
    emailUser: email.emailUser,
    suppressions: email.suppressions,
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
  // Every DLQ at once: one after another, a management API slowed by load (each request may take up
  // to its 10-s timeout) made one answer wait for the sum, past any client's patience.
  const peeks = await Promise.all(
    dlqQueues.map(async (queue) => {
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
      if (!res?.ok) return { queue, messages: [] };
      const messages = (await res.json().catch(() => [])) as {
        payload?: string;
        payload_encoding?: string;
        properties?: { message_id?: string; headers?: Record<string, unknown> };
      }[];
      return { queue, messages };
    }),
  );
  for (const { queue, messages } of peeks) {
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
