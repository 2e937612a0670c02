import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { classifyPgError, createPgPool, withTransaction } from '@community/db';
import { brokerUserOf, createMessaging, type Messaging } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createRelay, enqueueEvents, outboxSentAt, purgeSentOutbox, type OutboxRelay } from '../src';
import { alert, enqueue, mention, PRODUCER, QUEUE, topology, unsentCount } from './helpers';

let vhost: TestVhost;
let db: TestDatabase;
let pool: Pool;
let messaging: Messaging;
let registry: Registry;
let relay: OutboxRelay;

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('outbox-relay'), createTestDatabase('outbox_relay')]);
  pool = createPgPool(db.url, { max: 4 });
  registry = new Registry();
  messaging = createMessaging({
    url: vhost.url,
    service: 'outbox-test',
    topology,
    logger: testLogger(),
    registry,
    classifiers: [classifyPgError],
  });
  await messaging.start();
  // Polling is set to an hour: anything the relay sends in these tests is LISTEN/NOTIFY (or a
  // retry it scheduled itself), never the poll.
  relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger: testLogger(),
    registry,
    databaseUrl: db.url,
    pollIntervalMs: 3_600_000,
  });
  await relay.start();
});

afterAll(async () => {
  await relay.stop();
  await messaging.stop(1000);
  await pool.end();
  await Promise.all([vhost.delete(), db.drop()]);
});

async function metric(name: string, labels: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

async function takeAll(expected: number) {
  await eventually(`${expected} messages in ${QUEUE}`, async () => (await vhost.ready(QUEUE)) >= expected);
  return vhost.take(QUEUE, expected + 50);
}

it('reports the backlog and the age of its oldest row on /metrics, from the table', async () => {
  // A relay that is not running: its rows pile up, which is exactly what the gauges are for.
  const idle = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: 'idle-producer',
    logger: testLogger(),
    registry,
    databaseUrl: db.url,
  });
  const [zed1, zed2] = [mention('zed', 1), mention('zed', 2)];
  await withTransaction(pool, (tx) =>
    enqueueEvents(tx, 'idle-producer', [
      { event: zed1, aggregateId: 'zed' },
      { event: zed2, aggregateId: 'zed' },
    ]),
  );
  // Aged by hand instead of waited for: the oldest row 90 s old, the newer 30 s.
  await pool.query(
    "UPDATE outbox_messages SET created_at = now() - interval '90 seconds' WHERE producer = 'idle-producer' AND event_id = $1",
    [zed1.id],
  );
  await pool.query(
    "UPDATE outbox_messages SET created_at = now() - interval '30 seconds' WHERE producer = 'idle-producer' AND event_id = $1",
    [zed2.id],
  );
  expect(await metric('outbox_backlog_messages', 'producer="idle-producer"')).toBe(2);
  const lag = await metric('outbox_lag_seconds', 'producer="idle-producer"');
  expect(lag).toBeGreaterThanOrEqual(90); // the oldest row's age, not the newest's
  expect(lag).toBeLessThan(90 + 600); // …plus only the time this test took since the update
  await idle.stop();
  expect(await metric('outbox_backlog_messages', 'producer="idle-producer"')).toBeUndefined();
});

it('publishes committed rows with the contract properties (user-id: the relay connection’s broker user) and marks them sent after the confirm', async () => {
  const events = [mention('ada', 1), mention('bob', 2), mention('ada', 3)];
  await enqueue(pool, events);
  await eventually('all rows marked sent', async () => (await unsentCount(pool)) === 0);
  expect(relay.isHealthy()).toBe(true);

  const messages = await takeAll(3);
  expect(messages.map((m) => m.properties.message_id)).toEqual(events.map((e) => e.id));
  const [first] = messages;
  expect(first.routingKey).toBe('user.mentioned');
  expect(first.properties).toMatchObject({
    message_id: events[0].id,
    type: 'user.mentioned',
    correlation_id: events[0].correlationId,
    content_type: 'application/json',
    delivery_mode: 2,
    // Set by the publisher, validated by the broker: consumers know who published it (docs/MESSAGING.md "Broker identity").
    user_id: brokerUserOf(vhost.url),
    headers: { 'x-schema-version': 1 },
  });
  expect(brokerUserOf(vhost.url)).not.toBe('');
  expect(JSON.parse(first.body)).toEqual(events[0]);

  const { rows } = await pool.query(
    'SELECT event_id, sent_at, attempts, last_error FROM outbox_messages WHERE producer = $1 ORDER BY id',
    [PRODUCER],
  );
  expect(rows.map((r) => r.event_id)).toEqual(events.map((e) => e.id));
  for (const r of rows) expect(r).toMatchObject({ sent_at: expect.any(Date), attempts: 0, last_error: null });
  expect(await metric('outbox_backlog_messages', `producer="${PRODUCER}"`)).toBe(0);
  expect(await metric('outbox_published_total', 'outcome="confirmed"')).toBe(3);
});

it('never publishes rows written in a transaction that rolled back', async () => {
  const doomed = mention('carol', 10);
  await expect(
    withTransaction(pool, async (tx) => {
      await enqueueEvents(tx, PRODUCER, [{ event: doomed, aggregateId: 'carol' }]);
      throw new Error('the business write failed');
    }),
  ).rejects.toThrow('the business write failed');
  const marker = mention('carol', 11);
  await enqueue(pool, [marker]);

  const messages = await takeAll(1);
  expect(messages.map((m) => m.properties.message_id)).toEqual([marker.id]);
  const { rows } = await pool.query('SELECT 1 FROM outbox_messages WHERE event_id = $1', [doomed.id]);
  expect(rows).toHaveLength(0);
});

it('wakes on NOTIFY at commit, long before the hourly poll', async () => {
  const event = mention('dave', 20);
  await enqueue(pool, [event]);
  // Sent at all means woken: the relay's next poll is an hour away.
  await eventually(
    'row marked sent',
    async () =>
      (await pool.query('SELECT 1 FROM outbox_messages WHERE event_id = $1 AND sent_at IS NOT NULL', [event.id]))
        .rowCount === 1,
    30_000,
    20,
  );
  expect((await takeAll(1)).map((m) => m.properties.message_id)).toEqual([event.id]);
});

it('keeps an unroutable row unsent, holds its aggregate back, and publishes both once a queue is bound', async () => {
  // security.alert has no binding in this topology: the mandatory publish comes back unroutable.
  const blocked = alert('erin');
  const after = mention('erin', 30);
  await enqueue(pool, [blocked]);
  await enqueue(pool, [after]);

  const row = await eventually('a failed attempt recorded', async () => {
    const { rows } = await pool.query('SELECT sent_at, attempts, last_error FROM outbox_messages WHERE event_id = $1', [
      blocked.id,
    ]);
    return rows[0].attempts >= 1 ? rows[0] : undefined;
  });
  expect(row).toMatchObject({ sent_at: null, last_error: expect.stringMatching(/^UnroutableError: unroutable/) });
  expect(await metric('outbox_published_total', 'outcome="unroutable"')).toBeGreaterThanOrEqual(1);
  // Order per aggregate: erin's later event waits behind the failing one instead of overtaking it,
  // through another pass of the relay (the blocked row's retry) with both rows there.
  await eventually(
    'the blocked row retried',
    async () =>
      (await pool.query('SELECT attempts FROM outbox_messages WHERE event_id = $1', [blocked.id])).rows[0].attempts >=
      2,
  );
  expect(
    (await pool.query('SELECT sent_at FROM outbox_messages WHERE event_id = $1', [after.id])).rows[0].sent_at,
  ).toBeNull();
  expect(await vhost.ready(QUEUE)).toBe(0);
  expect(relay.isHealthy()).toBe(true);

  // The fix an operator would make: bind a queue. The retry (with backoff) then goes through.
  const conn = await amqplib.connect(vhost.url);
  const ch = await conn.createChannel();
  await ch.bindQueue(QUEUE, 'community.events', 'security.alert');
  await conn.close();

  await eventually('both rows sent', async () => (await unsentCount(pool)) === 0, 20_000);
  const messages = await takeAll(2);
  expect(messages.map((m) => m.properties.message_id)).toEqual([blocked.id, after.id]);
}, 30_000);

it('loses nothing and keeps per-aggregate order when the broker drops every connection mid-flight', async () => {
  const events = Array.from({ length: 100 }, (_, i) => mention(`agg-${i % 10}`, 100 + i));
  await enqueue(pool, events);
  await vhost.closeConnections();

  await eventually('every row sent', async () => (await unsentCount(pool)) === 0, 25_000);
  const messages = await vhost.take(QUEUE, 300);
  const ids = messages.map((m) => m.properties.message_id ?? '');
  // At-least-once: a confirm lost in the cut means a duplicate, never a gap.
  expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
  const firstSeen = [...new Set(ids)];
  for (let a = 0; a < 10; a++) {
    const expected = events.filter((e) => e.data.mentionedUserId === `agg-${a}`).map((e) => e.id);
    expect(firstSeen.filter((id) => expected.includes(id))).toEqual(expected);
  }
}, 40_000);

it('refuses an event that breaks the contract, failing the producer transaction before anything is written', async () => {
  const bad = { ...mention('fay', 40), data: { commentId: 'c-40' } } as unknown as ReturnType<typeof mention>;
  await expect(
    withTransaction(pool, (tx) => enqueueEvents(tx, PRODUCER, [{ event: bad, aggregateId: 'fay' }])),
  ).rejects.toThrow(/postId|required/);
  const { rows } = await pool.query('SELECT 1 FROM outbox_messages WHERE event_id = $1', [bad.id]);
  expect(rows).toHaveLength(0);
});

it('retention deletes sent rows past the horizon and never an unsent one', async () => {
  await withTransaction(pool, (tx) =>
    enqueueEvents(tx, 'retention-producer', [
      { event: mention('gus', 50), aggregateId: 'gus' },
      { event: mention('gus', 51), aggregateId: 'gus' },
    ]),
  );
  // As if the first one had been sent two hours ago (no relay serves this producer).
  await pool.query(
    `UPDATE outbox_messages SET sent_at = now() - interval '2 hours' WHERE producer = 'retention-producer' AND payload->'data'->>'excerpt' = 'gus#50'`,
  );
  const producer = 'retention-producer';
  expect(await purgeSentOutbox(pool, { producer, olderThanMs: 3 * 3_600_000 })).toEqual({ deleted: 0 }); // younger than 3 h
  expect(await purgeSentOutbox(pool, { producer, olderThanMs: 3_600_000, dryRun: true })).toEqual({ deleted: 1 });
  expect(await purgeSentOutbox(pool, { producer, olderThanMs: 3_600_000, batchSize: 1 })).toEqual({ deleted: 1 });
  const { rows } = await pool.query(
    `SELECT payload->'data'->>'excerpt' AS excerpt, sent_at FROM outbox_messages WHERE producer = 'retention-producer'`,
  );
  expect(rows).toEqual([{ excerpt: 'gus#51', sent_at: null }]);
});

it('outboxSentAt says which events the outbox holds and when each was published', async () => {
  const [waiting, published] = [mention('hal', 60), mention('hal', 61)];
  await withTransaction(pool, (tx) =>
    enqueueEvents(tx, 'sent-at-producer', [
      { event: waiting, aggregateId: 'hal' },
      { event: published, aggregateId: 'hal' },
    ]),
  );
  // No relay serves this producer: one row is marked as a relay would after its confirm.
  const sentAt = new Date('2026-01-02T03:04:05.678Z');
  await pool.query('UPDATE outbox_messages SET sent_at = $2 WHERE event_id = $1', [published.id, sentAt]);
  const never = randomUUID();
  const found = await outboxSentAt(pool, [waiting.id, published.id, never]);
  expect([...found.entries()].sort()).toEqual(
    [
      [waiting.id, null],
      [published.id, sentAt],
    ].sort(),
  );
  expect(found.has(never)).toBe(false);
});
