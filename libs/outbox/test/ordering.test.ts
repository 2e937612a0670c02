import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { classifyPgError, createPgPool } from '@community/db';
import { createMessaging, type Messaging } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createRelay, type OutboxRelay } from '../src';
import { enqueue, mention, PRODUCER, QUEUE, topology, unsentCount } from './helpers';

/** Two relays (two connections, two channels, two pools) share one outbox table, as two replicas would. */
let vhost: TestVhost;
let db: TestDatabase;
let pool: Pool;
const replicas: Array<{ messaging: Messaging; relay: OutboxRelay; registry: Registry; pool: Pool }> = [];

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('outbox-order'), createTestDatabase('outbox_order')]);
  pool = createPgPool(db.url, { max: 2 });
  for (let i = 0; i < 2; i++) {
    const registry = new Registry();
    const replicaPool = createPgPool(db.url, { max: 2 });
    const messaging = createMessaging({
      url: vhost.url,
      service: `relay-${i}`,
      topology,
      logger: testLogger(),
      registry,
      classifiers: [classifyPgError],
    });
    await messaging.start();
    // Replica 0 is slow (every publish leaves 30 ms late, still in id order), as a replica on a
    // congested link would be: without the per-aggregate rule, replica 1 would overtake it.
    const publisher = i === 0 ? { publish: slow(messaging.publisher.publish) } : messaging.publisher;
    const relay = createRelay({
      pool: replicaPool,
      publisher,
      producer: PRODUCER,
      logger: testLogger(),
      registry,
      databaseUrl: db.url,
      batchSize: 8,
      pollIntervalMs: 100,
    });
    replicas.push({ messaging, relay, registry, pool: replicaPool });
  }
});

afterAll(async () => {
  for (const r of replicas) {
    await r.relay.stop();
    await r.messaging.stop(1000);
    await r.pool.end();
  }
  await pool.end();
  await Promise.all([vhost.delete(), db.drop()]);
});

function slow<A extends unknown[]>(publish: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return (...args) => sleep(30).then(() => publish(...args));
}

async function confirmed(registry: Registry): Promise<number> {
  const counter = registry.getSingleMetric('outbox_published_total');
  if (!counter) throw new Error('outbox_published_total is not registered');
  const metric = await counter.get();
  return metric.values.filter((v) => v.labels.outcome === 'confirmed').reduce((sum, v) => sum + v.value, 0);
}

it('keeps the order of every aggregate with two relays publishing from the same table', async () => {
  const AGGREGATES = 20;
  const events = Array.from({ length: 500 }, (_, i) => mention(`user-${i % AGGREGATES}`, i));
  // A backlog first (both relays start on it at once), then a busy producer while both run: every
  // commit's NOTIFY wakes both, and they race for the same rows.
  await enqueue(pool, events.slice(0, 250));
  await Promise.all(replicas.map((r) => r.relay.start()));
  for (let i = 250; i < events.length; i += 10) await enqueue(pool, events.slice(i, i + 10));

  await eventually('every row sent', async () => (await unsentCount(pool)) === 0, 25_000);
  await eventually('every message queued', async () => (await vhost.ready(QUEUE)) >= events.length);
  const messages = await vhost.take(QUEUE, events.length + 100);
  expect(messages).toHaveLength(events.length); // no failure was injected: no duplicate either

  const received = new Map<string, number[]>();
  for (const m of messages) {
    const [aggregate, seq] = (JSON.parse(m.body).data.excerpt as string).split('#');
    received.set(aggregate, [...(received.get(aggregate) ?? []), Number(seq)]);
  }
  expect(received.size).toBe(AGGREGATES);
  for (const [aggregate, seqs] of received) {
    const sent = events
      .filter((e) => e.data.mentionedUserId === aggregate)
      .map((e) => Number(e.data.commentId.slice(2)));
    expect(seqs).toEqual(sent);
  }
  // Both relays did part of the work; otherwise this test would prove nothing about concurrency.
  const counts = await Promise.all(replicas.map((r) => confirmed(r.registry)));
  expect(counts[0] + counts[1]).toBe(events.length);
  expect(Math.min(...counts)).toBeGreaterThan(0);
}, 40_000);
