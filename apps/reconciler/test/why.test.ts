import { randomUUID } from 'node:crypto';
import { buildEvent, mentionKey, type AnyEvent } from '@community/contracts';
import { managementTargetFor } from '@community/messaging';
import {
  createdNotificationsSql,
  notificationCreatedOf,
  storedNotificationOf,
  type StoredNotificationRow,
} from '@community/notification-service';
import type { TestDatabase } from '@community/testing';
import { gatherWhy } from '../src/store/why';
import { bearer, createTestDatabase, startReconciler, type Reconciler } from './harness';

/**
 * "Why didn't user X get notification Y?" answers about X only. Two users are mentioned in the same
 * comment; each has a notification, an email delivery, a digest item, and a dead letter; asked
 * about one of them (by comment, by the other's event id, by the other's idempotency key), no part
 * of the answer (events, inbox, notifications, deliveries, digest items, dead letters) and no line
 * of the explanation is the other user's.
 */
let db: TestDatabase;
let rc: Reconciler;
const tag = randomUUID().slice(0, 8);
const ADA = `ada-${tag}`;
const BOB = `bob-${tag}`;
const CAROL = `carol-${tag}`; // the author of the comment
const COMMENT = `c-${tag}`;
// Never reached: no broker DLQ is peeked here, only the console's table.
const NOWHERE = managementTargetFor('amqp://guest:guest@127.0.0.1:5672', 'http://127.0.0.1:9');

const mention = (user: string): AnyEvent =>
  buildEvent(
    'user.mentioned',
    { commentId: COMMENT, postId: 'p1', actorId: CAROL, mentionedUserId: user, excerpt: `@${user} look` },
    { producer: 'community-api' },
  );
const events = { [ADA]: mention(ADA), [BOB]: mention(BOB) };
const key = (user: string) => mentionKey(COMMENT, user);
/** Each user's notification.created id (their notification row's id). */
const createdIds: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase('rc_why_scope');
  rc = await startReconciler(db, undefined, { env: { RABBITMQ_MANAGEMENT_URL: 'http://127.0.0.1:9' } });
  const pool = rc.svc.pool;
  for (const user of [ADA, BOB]) {
    const e = events[user];
    await pool.query(
      `INSERT INTO outbox_messages (producer, aggregate_id, event_id, event_type, routing_key, payload, sent_at) VALUES ('community-api', $1, $2, $3, $3, $4, now())`,
      [COMMENT, e.id, e.type, e],
    );
    await pool.query(`INSERT INTO processed_events (consumer, event_id) VALUES ('notification-service.critical', $1)`, [
      e.id,
    ]);
    // The notification row is the record of its notification.created (the event id is the row's
    // id): notification-service emits it after the commit, without an outbox row.
    const row = await pool.query<{ id: string; created_at: Date }>(
      `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, actor_id, resource_type, resource_id, email_channel, source_event_id, created_version, state_version, correlation_id)
       VALUES ($1, 'mention', $2, $2, $3, 'comment', $4, 'digest', $5, 1, 1, $6) RETURNING id::text, created_at`,
      [user, key(user), CAROL, COMMENT, e.id, e.correlationId],
    );
    const params: unknown[] = [];
    const bind = (v: unknown) => `$${params.push(v)}`;
    const window = { since: new Date(row.rows[0].created_at.getTime() - 1), until: new Date(Date.now() + 60_000) };
    const sql = createdNotificationsSql(bind, window, (n) => [`${n.eventId} = ${bind(row.rows[0].id)}`]);
    const created = notificationCreatedOf(
      storedNotificationOf((await pool.query<StoredNotificationRow>(sql, params)).rows[0]),
    );
    createdIds[user] = created.id;
    await pool.query(
      `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, state, attempts, last_error) VALUES ($1, 'immediate', $2, $3, 'failed', 3, $4)`,
      [key(user), user, `<${randomUUID()}@test>`, `550 mailbox of ${user} unavailable`],
    );
    const w = await pool.query<{ id: string }>(
      `INSERT INTO email_digest_windows (user_id, window_start, window_end) VALUES ($1, now(), now() + interval '1 day') RETURNING id::text`,
      [user],
    );
    await pool.query(
      `INSERT INTO email_digest_items (idempotency_key, window_id, user_id, notification_id, notification_type, resource_type, resource_id, occurred_at) VALUES ($1, $2, $3, $4, 'mention', 'comment', $5, now())`,
      [key(user), w.rows[0].id, user, randomUUID(), COMMENT],
    );
    // The dead letter of each user's notification.created (email-service refused it).
    await pool.query(
      `INSERT INTO dlq_messages (queue, original_queue, message_id, dead_lettered_at, properties, headers, body, error_class, error_message, error_kind, fingerprint)
       VALUES ('email-service.send.dlq', 'email-service.send', $1, now(), '{}', '{}', $2, 'PermanentError', $3, 'permanent', 'f')`,
      [created.id, Buffer.from(JSON.stringify(created)), `no address for ${user}`],
    );
  }
});
afterAll(async () => {
  await rc?.close();
  await db?.drop();
});

/** Everything gathered about `user`, as text: the other user's name must not be in it. */
async function facts(user: string, target: { eventId?: string; commentId?: string; idempotencyKey?: string }) {
  return gatherWhy(rc.svc.pool, NOWHERE, [], { userId: user, ...target });
}

it("by comment: only the asked user's event, inbox rows, notification, delivery, digest item and dead letter", async () => {
  const f = await facts(ADA, { commentId: COMMENT });
  expect(f.events.map((e) => e.eventId)).toEqual([events[ADA].id]);
  expect(f.inbox.map((r) => r.eventId)).toEqual([events[ADA].id]);
  expect(f.items.map((i) => i.idempotencyKey)).toEqual([key(ADA)]);
  expect(f.deliveries.map((d) => d.idempotencyKey)).toEqual([key(ADA)]);
  expect(f.digestItems.map((d) => d.idempotencyKey)).toEqual([key(ADA)]);
  expect(f.dead.map((d) => d.cause)).toEqual([`permanent: PermanentError: no address for ${ADA}`]);
  // The notification.created of the notification is its row (same id): found without an outbox row.
  expect(f.created).toEqual([
    { eventId: createdIds[ADA], idempotencyKey: key(ADA), createdAt: expect.any(String), withdrawnAt: null },
  ]);
  expect(f.dead.map((d) => d.messageId)).toEqual([createdIds[ADA]]);
  expect(JSON.stringify(f)).not.toContain(BOB);
  expect(JSON.stringify(f)).not.toContain(events[BOB].id);
  expect(JSON.stringify(f)).not.toContain(createdIds[BOB]);
});

it("by the other user's event id or idempotency key: nothing of theirs", async () => {
  const byEvent = await facts(ADA, { eventId: events[BOB].id });
  expect(byEvent).toMatchObject({ events: [], inbox: [], items: [], deliveries: [], digestItems: [], dead: [] });
  const byKey = await facts(ADA, { idempotencyKey: key(BOB) });
  expect(byKey).toMatchObject({ events: [], inbox: [], items: [], deliveries: [], digestItems: [], dead: [] });
  for (const f of [byEvent, byKey]) expect(JSON.stringify(f)).not.toContain(BOB);
  // The owner still gets the whole story of their own.
  const own = await facts(BOB, { idempotencyKey: key(BOB) });
  expect(own.deliveries.map((d) => d.lastError)).toEqual([`550 mailbox of ${BOB} unavailable`]);
  expect(own.digestItems).toHaveLength(1);
});

it('GET /v1/admin/why: no line of the explanation names the other user or their messages', async () => {
  for (const query of [
    `commentId=${COMMENT}`,
    `eventId=${events[BOB].id}`,
    `idempotencyKey=${encodeURIComponent(key(BOB))}`,
  ]) {
    const res = await rc.svc.app.inject({ url: `/v1/admin/why?userId=${ADA}&${query}`, headers: bearer(rc.token()) });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(BOB);
    expect(res.body).not.toContain(events[BOB].id);
    expect(res.body).not.toContain(createdIds[BOB]);
  }
  const own = await rc.svc.app.inject({
    url: `/v1/admin/why?userId=${ADA}&commentId=${COMMENT}`,
    headers: bearer(rc.token()),
  });
  expect(own.json().steps.find((s: { step: string }) => s.step === 'dead-letter').detail).toContain(
    `no address for ${ADA}`,
  );
  expect(own.json().steps.find((s: { step: string }) => s.step === 'email.decision').detail).toContain(
    `digest email; notification.created ${createdIds[ADA]} emitted after its row's commit (created at `,
  );
});
