import { Pool } from 'pg';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { claimEvent, purgeProcessedEvents, runBatchOnce, runOnce, withTransaction, isUniqueViolation } from './index';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('idempotency');
  pool = new Pool({ connectionString: db.url, max: 6 });
  // A consumer's own table, without a unique key: a second effect would show as a second row.
  await pool.query('CREATE TABLE effects (event_id text NOT NULL, note text)');
});

afterAll(async () => {
  await pool.end();
  await db.drop();
});

const effectsOf = async (eventId: string) => Number((await pool.query('SELECT count(*) FROM effects WHERE event_id = $1', [eventId])).rows[0].count);
const addEffect = (eventId: string) => async (tx: import('pg').PoolClient) => {
  await tx.query('INSERT INTO effects (event_id) VALUES ($1)', [eventId]);
  return eventId;
};

it('claims an event once per consumer', async () => {
  await withTransaction(pool, async (tx) => {
    expect(await claimEvent(tx, 'a', 'e-1')).toBe(true);
    expect(await claimEvent(tx, 'a', 'e-1')).toBe(false);
    expect(await claimEvent(tx, 'b', 'e-1')).toBe(true); // another consumer has its own inbox
  });
});

it('applies effects once for a redelivered event', async () => {
  expect(await runOnce(pool, 'c', 'e-2', addEffect('e-2'))).toEqual({ duplicate: false, result: 'e-2' });
  expect(await runOnce(pool, 'c', 'e-2', addEffect('e-2'))).toEqual({ duplicate: true });
  expect(await effectsOf('e-2')).toBe(1);
});

it('rolls the inbox row back with failed effects, so the retry does the work', async () => {
  await expect(
    runOnce(pool, 'c', 'e-3', async (tx) => {
      await addEffect('e-3')(tx);
      throw new Error('effect failed halfway');
    }),
  ).rejects.toThrow('halfway');
  expect(await effectsOf('e-3')).toBe(0);
  expect(await runOnce(pool, 'c', 'e-3', addEffect('e-3'))).toMatchObject({ duplicate: false });
  expect(await effectsOf('e-3')).toBe(1);
});

it('has exactly one effect when the same event is processed concurrently', async () => {
  const results = await Promise.all(Array.from({ length: 5 }, () => runOnce(pool, 'c', 'e-4', addEffect('e-4'))));
  expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
  expect(await effectsOf('e-4')).toBe(1);
});

it('batches: fresh items only, duplicates within and across batches absorbed', async () => {
  const first = await runBatchOnce(pool, 'd', [{ eventId: 'b-1' }, { eventId: 'b-2' }, { eventId: 'b-1' }], async (tx, fresh) => {
    for (const f of fresh) await addEffect(f.eventId)(tx);
    return fresh.length;
  });
  expect(first.result).toBe(2);
  expect(first.duplicates).toEqual([{ eventId: 'b-1' }]);
  const second = await runBatchOnce(pool, 'd', [{ eventId: 'b-2' }, { eventId: 'b-3' }], async (tx, fresh) => {
    for (const f of fresh) await addEffect(f.eventId)(tx);
    return fresh.map((f) => f.eventId);
  });
  expect(second.result).toEqual(['b-3']);
  expect([await effectsOf('b-1'), await effectsOf('b-2'), await effectsOf('b-3')]).toEqual([1, 1, 1]);
});

it('recognises unique violations by SQLSTATE and constraint name', async () => {
  await pool.query('CREATE TABLE keyed (k text CONSTRAINT keyed_k_key UNIQUE)');
  await pool.query("INSERT INTO keyed VALUES ('x')");
  const err = await pool.query("INSERT INTO keyed VALUES ('x')").catch((e: unknown) => e);
  expect(isUniqueViolation(err)).toBe(true);
  expect(isUniqueViolation(err, 'keyed_k_key')).toBe(true);
  expect(isUniqueViolation(err, 'other')).toBe(false);
  expect(isUniqueViolation(new Error('duplicate key'))).toBe(false);
});

it('purges only rows past the retention horizon, and refuses a horizon that could reopen duplicates', async () => {
  await pool.query("INSERT INTO processed_events (consumer, event_id, processed_at) VALUES ('p', 'old-1', now() - interval '10 days'), ('p', 'old-2', now() - interval '8 days'), ('p', 'new-1', now())");
  await expect(purgeProcessedEvents(pool, { olderThanMs: 60_000 })).rejects.toThrow(/below the minimum/);
  expect(await purgeProcessedEvents(pool, { consumer: 'p', batchSize: 1 })).toBe(2);
  const left = await pool.query("SELECT event_id FROM processed_events WHERE consumer = 'p'");
  expect(left.rows.map((r) => r.event_id)).toEqual(['new-1']);
});

it('commits asynchronously only when asked, and only that transaction', async () => {
  const single = new Pool({ connectionString: db.url, max: 1 }); // one connection: the setting must not leak to the next user
  try {
    const show = async (tx: import('pg').PoolClient) => (await tx.query('SHOW synchronous_commit')).rows[0].synchronous_commit as string;
    expect(await withTransaction(single, { synchronousCommit: false }, show)).toBe('off');
    expect(await withTransaction(single, show)).toBe('on');
    await withTransaction(single, { synchronousCommit: false }, addEffect('async-1'));
    expect(await effectsOf('async-1')).toBe(1);
  } finally {
    await single.end();
  }
});
