// The inbox NOTIFY (store/ingest.ts): however many inboxes change in one transaction, every user id
// is announced once, in payloads PostgreSQL accepts (8000 bytes at most), and only at commit.
import type { Pool } from 'pg';
import { createListenClient, createPgPool, withTransaction, type ListenClient } from '@community/db';
import { createTestDatabase, eventually, testLogger, type TestDatabase } from '@community/testing';
import { INBOX_CHANNEL, notifyInboxes } from '../src/store/ingest';

let db: TestDatabase;
let pool: Pool;
let listener: ListenClient;
const payloads: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase('ns_inbox_notify');
  pool = createPgPool(db.url, { max: 2 });
  listener = createListenClient({
    connectionString: db.url,
    channels: [INBOX_CHANNEL],
    logger: testLogger('inbox-notify'),
    onNotification: (n) => payloads.push(n.payload ?? ''),
  });
  await listener.start();
});

afterAll(async () => {
  await listener.stop();
  await pool.end();
  await db.drop();
});

it('announces thousands of changed inboxes in chunks under the payload limit, each user once', async () => {
  payloads.length = 0;
  // Ids with quotes and backslashes: JSON escaping makes them longer in the payload than in the table.
  const users = Array.from({ length: 3000 }, (_, i) => `user-"\\-${i}`);
  await withTransaction(pool, (tx) => notifyInboxes(tx, [...users, ...users.slice(0, 10)]));
  await eventually(
    'every user announced',
    () => payloads.flatMap((p) => JSON.parse(p) as string[]).length >= users.length,
    10_000,
    20,
  );
  const announced = payloads.flatMap((p) => JSON.parse(p) as string[]);
  expect(announced.sort()).toEqual([...users].sort());
  expect(payloads.length).toBeGreaterThan(1);
  for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThan(8000);
});

it('announces nothing for a rolled-back change or an empty list', async () => {
  payloads.length = 0;
  await withTransaction(pool, (tx) => notifyInboxes(tx, []));
  await expect(
    withTransaction(pool, async (tx) => {
      await notifyInboxes(tx, ['rolled-back-user']);
      throw new Error('rolled back');
    }),
  ).rejects.toThrow('rolled back');
  await withTransaction(pool, (tx) => notifyInboxes(tx, ['marker']));
  await eventually('marker', () => payloads.length > 0, 5000, 10);
  expect(payloads).toEqual(['["marker"]']);
});
