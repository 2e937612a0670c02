// createListenClient against a private database: notifications, reconnect after its backend is
// terminated, and no connection left behind when LISTEN fails after connecting. Only this file's own
// backends are terminated (found by application_name in its own database); the server is never restarted.
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import pino from 'pino';
import { createTestDatabase, eventually, type TestDatabase } from '@community/testing';
import { createListenClient, createPgPool, type ListenClient, type ListenNotification } from '../src/index';

let db: TestDatabase;
let pool: Pool;
const clients: ListenClient[] = [];

beforeAll(async () => {
  db = await createTestDatabase('db_listen');
  pool = createPgPool(db.url, { max: 2 });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.stop()));
  await pool.end();
  await db.drop();
});

const logger = pino({ level: 'silent' });
const appName = (tag: string) => `listen-test-${tag}-${randomBytes(3).toString('hex')}`;

/** This database's backends opened under `applicationName`. */
async function backends(applicationName: string): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
    [applicationName],
  );
  return rows.map((r) => r.pid);
}

function start(applicationName: string, channels: string[]) {
  const received: ListenNotification[] = [];
  const events: string[] = [];
  const client = createListenClient({
    connectionString: db.url,
    channels,
    applicationName,
    logger,
    backoff: { baseMs: 20, maxMs: 100 },
    onNotification: (n) => received.push(n),
    onListening: () => events.push('listening'),
    onLost: () => events.push('lost'),
  });
  clients.push(client);
  return { client, received, events };
}

it('delivers the notifications of every channel it listens on', async () => {
  const { client, received, events } = start(appName('notify'), ['first_channel', 'second_channel']);
  await client.start();
  expect(client.isListening()).toBe(true);
  expect(events).toEqual(['listening']);
  await pool.query(
    "SELECT pg_notify('first_channel', 'one'), pg_notify('second_channel', 'two'), pg_notify('other_channel', 'three')",
  );
  await eventually('both notifications', () => received.length === 2, 5000, 10);
  expect(received).toEqual([
    { channel: 'first_channel', payload: 'one' },
    { channel: 'second_channel', payload: 'two' },
  ]);
  await client.stop();
  expect(client.isListening()).toBe(false);
});

it('reconnects after pg_terminate_backend of its connection, and listens again', async () => {
  const name = appName('terminate');
  const { client, received, events } = start(name, ['reconnect_channel']);
  await client.start();
  const [pid] = await backends(name);
  expect(pid).toBeDefined();

  await pool.query('SELECT pg_terminate_backend($1)', [pid]);
  await eventually(
    'listening again on a new backend',
    async () => client.isListening() && (await backends(name)).some((p) => p !== pid),
    10_000,
    20,
  );
  expect(events).toEqual(['listening', 'lost', 'listening']);
  expect(await backends(name)).toHaveLength(1);

  await pool.query("SELECT pg_notify('reconnect_channel', 'after')");
  await eventually('notification after the reconnect', () => received.some((n) => n.payload === 'after'), 5000, 10);
  await client.stop();
  await eventually('connection closed by stop()', async () => (await backends(name)).length === 0, 5000, 20);
});

it('leaves no connection behind when LISTEN fails after connecting, however often it retries', async () => {
  const name = appName('failing');
  // A zero-length identifier is a syntax error: every attempt connects, then its LISTEN fails.
  const { client, events } = start(name, ['']);
  await client.start(); // resolves after the first attempt, failed or not
  expect(client.isListening()).toBe(false);
  await eventually('several failed attempts', () => events.filter((e) => e === 'lost').length >= 5, 10_000, 10);
  expect(events).not.toContain('listening');
  await client.stop();
  // A leaked client would stay connected for good.
  await eventually('no connection left', async () => (await backends(name)).length === 0, 5000, 20);
});

it('keeps retrying while the server refuses it, and stop() ends the wait', async () => {
  const url = new URL(db.url);
  url.port = '1'; // nothing listens there
  const lost: Error[] = [];
  const client = createListenClient({
    connectionString: url.toString(),
    channels: ['nowhere'],
    logger,
    // An hour (full jitter: up to an hour): far past the test's own timeout, so stop() can only
    // resolve in time by ending the wait, not by outlasting it.
    backoff: { baseMs: 3_600_000, maxMs: 3_600_000 },
    onNotification: () => undefined,
    onLost: (err) => lost.push(err),
  });
  await client.start();
  expect(lost).toHaveLength(1);
  await client.stop(); // during that backoff
  expect(client.isListening()).toBe(false);
}, 30_000);

it('resolves start() and stop() when stopped before it ever started', async () => {
  const { client, events } = start(appName('never'), ['never_channel']);
  await client.stop();
  await client.start();
  expect(client.isListening()).toBe(false);
  expect(events).toEqual([]);
});
