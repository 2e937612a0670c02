// The unread-counter recount and repair (store/counter-repair.ts), which the reconciler schedules:
// drift is set back exactly and announced to the inbox's streams, a dry run changes nothing, the
// caller's audit commits or fails with the repair, and a live write that commits while the repair
// waits for its lock is counted, never undone.
import type { Pool } from 'pg';
import { createListenClient, createPgPool, withTransaction, type ListenClient } from '@community/db';
import { createTestDatabase, eventually, testLogger, type TestDatabase } from '@community/testing';
import { counterBatchBoundaries, recountCounterBatch, type CounterBatchOptions, type Drift } from '../src';
import { INBOX_CHANNEL } from '../src/store/ingest';

let db: TestDatabase;
let pool: Pool;
let listener: ListenClient;
const announced: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase('ns_counter_repair');
  pool = createPgPool(db.url, { max: 4 });
  listener = createListenClient({
    connectionString: db.url,
    channels: [INBOX_CHANNEL],
    logger: testLogger('counter-repair'),
    onNotification: (n) => announced.push(...(JSON.parse(n.payload ?? '[]') as string[])),
  });
  await listener.start();
});
afterAll(async () => {
  await listener?.stop();
  await pool?.end();
  await db?.drop();
});
beforeEach(async () => {
  await pool.query('TRUNCATE notification_items, notification_counters');
  announced.length = 0;
});

/** `users` users with `perUser` unread in-app notifications each, counters exact. */
async function seed(users: number, perUser: number): Promise<string[]> {
  const ids = Array.from({ length: users }, (_, i) => `u${String(i).padStart(4, '0')}`);
  await pool.query(
    `INSERT INTO notification_counters (user_id, unread_count, version) SELECT u, $2, 1 FROM unnest($1::text[]) AS u`,
    [ids, perUser],
  );
  await addItems(pool, ids, perUser);
  return ids;
}

async function addItems(q: Pick<Pool, 'query'>, ids: string[], perUser: number): Promise<void> {
  await q.query(
    `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, email_channel, source_event_id, created_version, state_version)
     SELECT u, 'reaction', gen_random_uuid()::text, gen_random_uuid()::text, 'post', 'p', 'off', gen_random_uuid()::text, 1, 1
       FROM unnest($1::text[]) AS u, generate_series(1, $2) AS g`,
    [ids, perUser],
  );
}

const counters = async () =>
  (
    await pool.query<{ user_id: string; unread_count: number; version: string }>(
      'SELECT user_id, unread_count, version FROM notification_counters ORDER BY user_id',
    )
  ).rows;

/** Every batch from the first user, as a sweep runs them. */
async function sweep(opts: Omit<CounterBatchOptions, 'after'>): Promise<{ checked: number; drifts: Drift[] }> {
  let after = '';
  let checked = 0;
  const drifts: Drift[] = [];
  for (;;) {
    const batch = await recountCounterBatch(pool, { ...opts, after });
    if (batch.last === null) return { checked, drifts };
    checked += batch.checked;
    drifts.push(...batch.drifts);
    after = batch.last;
  }
}

it('sets drifted counters back exactly, as a new inbox version, announces them and audits them in the repair', async () => {
  const users = await seed(25, 2);
  await pool.query(
    `UPDATE notification_counters SET unread_count = CASE user_id WHEN $1 THEN 9 ELSE -1 END WHERE user_id = ANY($2)`,
    [users[3], [users[3], users[24]]],
  );
  const audited: Drift[][] = [];
  const result = await sweep({
    limit: 10,
    dryRun: false,
    audit: async (tx, repaired) => {
      // Inside the repair's transaction: the repair is visible here, not yet to anyone else.
      const seen = await tx.query('SELECT unread_count FROM notification_counters WHERE user_id = $1', [
        repaired[0].userId,
      ]);
      expect(seen.rows[0].unread_count).toBe(2);
      audited.push([...repaired]);
    },
  });
  const expected = [
    { userId: users[3], stored: 9, recounted: 2 },
    { userId: users[24], stored: -1, recounted: 2 },
  ];
  expect(result).toEqual({ checked: 25, drifts: expected });
  expect(audited.flat()).toEqual(expected);
  const rows = await counters();
  expect(rows.every((r) => r.unread_count === 2)).toBe(true);
  expect(rows.filter((r) => r.version === '2').map((r) => r.user_id)).toEqual([users[3], users[24]]);
  await eventually('both repaired inboxes announced', () => announced.length >= 2, 10_000, 20);
  expect(announced.sort()).toEqual([users[3], users[24]]);
  // Nothing left to repair.
  expect((await sweep({ limit: 10, dryRun: false })).drifts).toEqual([]);
});

it('a dry run reports the drift and changes, audits and announces nothing', async () => {
  const users = await seed(5, 1);
  await pool.query('UPDATE notification_counters SET unread_count = 4 WHERE user_id = $1', [users[2]]);
  const audit = jest.fn();
  const result = await sweep({ limit: 10, dryRun: true, audit });
  expect(result.drifts).toEqual([{ userId: users[2], stored: 4, recounted: 1 }]);
  expect(audit).not.toHaveBeenCalled();
  expect((await counters()).find((r) => r.user_id === users[2])).toMatchObject({ unread_count: 4, version: '1' });
  // A NOTIFY would come at the commit of the (empty) repair: a real repair's after it proves none came before.
  await sweep({ limit: 10, dryRun: false, userIds: [users[2]] });
  await eventually('the real repair announced', () => announced.length >= 1, 10_000, 20);
  expect(announced).toEqual([users[2]]);
});

it('an audit that fails takes the repair with it', async () => {
  const users = await seed(3, 1);
  await pool.query('UPDATE notification_counters SET unread_count = 7 WHERE user_id = $1', [users[1]]);
  await expect(
    recountCounterBatch(pool, {
      after: '',
      limit: 10,
      dryRun: false,
      audit: async () => {
        throw new Error('audit refused');
      },
    }),
  ).rejects.toThrow('audit refused');
  expect((await counters()).find((r) => r.user_id === users[1])?.unread_count).toBe(7);
});

it('a live write that commits while the repair waits for its lock is counted, not undone', async () => {
  const users = await seed(3, 1);
  await pool.query('UPDATE notification_counters SET unread_count = 5 WHERE user_id = $1', [users[0]]);
  const live = await pool.connect();
  try {
    // The live path: the counter row first, then a new row and its increment (the drift stays).
    await live.query('BEGIN');
    await live.query('SELECT 1 FROM notification_counters WHERE user_id = $1 FOR UPDATE', [users[0]]);
    await addItems(live, [users[0]], 1);
    await live.query('UPDATE notification_counters SET unread_count = unread_count + 1 WHERE user_id = $1', [users[0]]);
    const repair = recountCounterBatch(pool, { after: '', limit: 10, dryRun: false });
    await eventually(
      'the repair waits for the live lock',
      async () =>
        (
          await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'`,
          )
        ).rows.length > 0,
      10_000,
      20,
    );
    await live.query('COMMIT');
    const batch = await repair;
    // Stored 6 (5 + the live increment) against 2 rows: set to 2, which counts the live row.
    expect(batch.drifts).toEqual([{ userId: users[0], stored: 6, recounted: 2 }]);
  } finally {
    live.release();
  }
  expect((await counters()).find((r) => r.user_id === users[0])?.unread_count).toBe(2);
});

it('only in-app unread rows count, and the batch boundaries cut the users into ranges', async () => {
  const users = await seed(7, 3);
  await withTransaction(pool, async (tx) => {
    await tx.query(
      `UPDATE notification_items SET read_at = now(), item_unread = false WHERE id = (SELECT id FROM notification_items WHERE user_id = $1 LIMIT 1)`,
      [users[0]],
    );
    await tx.query(
      `UPDATE notification_items SET in_app = false WHERE id = (SELECT id FROM notification_items WHERE user_id = $1 LIMIT 1)`,
      [users[1]],
    );
  });
  const result = await sweep({ limit: 3, dryRun: false });
  expect(result.drifts).toEqual([
    { userId: users[0], stored: 3, recounted: 2 },
    { userId: users[1], stored: 3, recounted: 2 },
  ]);
  expect(await counterBatchBoundaries(pool, 3)).toEqual([users[2], users[5], users[6]]);
});
