import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
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
import { createRelay } from '../src';
import { enqueue, mention, PRODUCER, QUEUE, topology, unsentCount } from './helpers';

/** The one crash window of the outbox, injected for real: a relay process killed between confirm and mark. */
let vhost: TestVhost;
let db: TestDatabase;
let pool: Pool;
let messaging: Messaging;

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('outbox-crash'), createTestDatabase('outbox_crash')]);
  pool = createPgPool(db.url, { max: 2 });
  messaging = createMessaging({
    url: vhost.url,
    service: 'outbox-crash-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [classifyPgError],
  });
  await messaging.start(); // declares the queue before anything is published
});

afterAll(async () => {
  await messaging.stop(1000);
  await pool.end();
  await Promise.all([vhost.delete(), db.drop()]);
});

it('re-publishes rows whose confirm arrived just before the relay died: a duplicate, nothing lost', async () => {
  const events = Array.from({ length: 5 }, (_, i) => mention(`user-${i}`, i));
  await enqueue(pool, events);

  const child = spawn(process.execPath, ['-r', '@swc-node/register', path.join(__dirname, 'child-relay.ts')], {
    env: { ...process.env, AMQP_URL: vhost.url, DATABASE_URL: db.url, OUTBOX_CRASH_AFTER_PUBLISH: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [code, signal] = await once(child, 'exit');
  expect(signal ?? code).toBe('SIGKILL');

  // The broker has every message (confirmed), the table says none was sent.
  await eventually('the first run reached the queue', async () => (await vhost.ready(QUEUE)) === events.length);
  expect(await unsentCount(pool)).toBe(events.length);

  // The second run (any relay, here one in this process) cannot know the broker already has them.
  const relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger: testLogger(),
    registry: new Registry(),
    databaseUrl: db.url,
  });
  await relay.start();
  try {
    await eventually('the second run marked every row', async () => (await unsentCount(pool)) === 0);
  } finally {
    await relay.stop();
  }
  await eventually('both runs queued', async () => (await vhost.ready(QUEUE)) === 2 * events.length);
  const ids = (await vhost.take(QUEUE, 100)).map((m) => m.properties.message_id ?? '');
  // Each message arrives exactly twice, with the same messageId (= event id) that consumers dedup on.
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  expect(new Map([...counts].sort())).toEqual(new Map(events.map((e) => [e.id, 2] as [string, number]).sort()));
}, 30_000);
