// The inbox claim (inboxClaim) and retention against a private migrated database.
import type { Pool, PoolClient } from 'pg';
import { createPgPool, createScheduler, withTransaction } from '@community/db';
import { createTestDatabase, testLogger, type TestDatabase } from '@community/testing';
import {
  countPurgeableProcessedEvents,
  inboxClaim,
  inboxRetentionJob,
  processedAtBy,
  purgeProcessedEvents,
} from '../src/index';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('idempotency');
  pool = createPgPool(db.url, { max: 6 });
  // A consumer's own table, without a unique key: a second effect would show as a second row.
  await pool.query('CREATE TABLE effects (event_id text NOT NULL, note text)');
});

afterAll(async () => {
  await pool.end();
  await db.drop();
});

const effectsOf = async (eventId: string) =>
  Number((await pool.query('SELECT count(*) FROM effects WHERE event_id = $1', [eventId])).rows[0].count);

/** The claim as a consumer runs it: its own statement here, a CTE of a bigger one in notification-service. */
async function claim(tx: PoolClient, consumer: string, eventIds: string[]): Promise<Set<string>> {
  const statement = inboxClaim(consumer, eventIds);
  const res = await tx.query<{ event_id: string }>(statement.text, statement.values);
  return new Set(res.rows.map((r) => r.event_id));
}

/** Claims `eventIds`, then applies an effect for each fresh one, all in one transaction. */
function consume(consumer: string, eventIds: string[], fail?: Error): Promise<string[]> {
  return withTransaction(pool, async (tx) => {
    const fresh = [...(await claim(tx, consumer, eventIds))].sort();
    await tx.query('INSERT INTO effects (event_id) SELECT unnest($1::text[])', [fresh]);
    if (fail) throw fail;
    return fresh;
  });
}

it('claims an event once per consumer', async () => {
  await withTransaction(pool, async (tx) => {
    expect(await claim(tx, 'a', ['e-1'])).toEqual(new Set(['e-1']));
    expect(await claim(tx, 'a', ['e-1'])).toEqual(new Set());
    expect(await claim(tx, 'b', ['e-1'])).toEqual(new Set(['e-1'])); // another consumer has its own inbox
  });
});

it('applies effects once for a redelivered event', async () => {
  expect(await consume('c', ['e-2'])).toEqual(['e-2']);
  expect(await consume('c', ['e-2'])).toEqual([]);
  expect(await effectsOf('e-2')).toBe(1);
});

it('rolls the inbox row back with failed effects, so the retry does the work', async () => {
  await expect(consume('c', ['e-3'], new Error('effect failed halfway'))).rejects.toThrow('halfway');
  expect(await effectsOf('e-3')).toBe(0);
  expect(await consume('c', ['e-3'])).toEqual(['e-3']);
  expect(await effectsOf('e-3')).toBe(1);
});

it('has exactly one effect when the same event is processed concurrently', async () => {
  const results = await Promise.all(Array.from({ length: 5 }, () => consume('c', ['e-4'])));
  expect(results.filter((fresh) => fresh.length > 0)).toHaveLength(1);
  expect(await effectsOf('e-4')).toBe(1);
});

it('batches: fresh items only, duplicates within and across batches absorbed', async () => {
  expect(await consume('d', ['b-1', 'b-2', 'b-1'])).toEqual(['b-1', 'b-2']);
  expect(await consume('d', ['b-2', 'b-3'])).toEqual(['b-3']);
  expect([await effectsOf('b-1'), await effectsOf('b-2'), await effectsOf('b-3')]).toEqual([1, 1, 1]);
});

it('never deadlocks two batches that claim the same ids in opposite orders', async () => {
  // Large enough that the two statements overlap: claimed in the given order, they deadlock every time.
  const ids = Array.from({ length: 20_000 }, (_, i) => `o-${String(i).padStart(5, '0')}`);
  const [forward, backward] = await Promise.all([consume('o', ids), consume('o', [...ids].reverse())]);
  expect(forward.length + backward.length).toBe(ids.length);
});

it('purges only rows past the retention horizon, and refuses a horizon that could reopen duplicates', async () => {
  await pool.query(
    "INSERT INTO processed_events (consumer, event_id, processed_at) VALUES ('p', 'old-1', now() - interval '10 days'), ('p', 'old-2', now() - interval '8 days'), ('p', 'new-1', now())",
  );
  await expect(purgeProcessedEvents(pool, { olderThanMs: 60_000 })).rejects.toThrow(/below the minimum/);
  expect(await purgeProcessedEvents(pool, { consumer: 'p', batchSize: 1 })).toBe(2);
  const left = await pool.query("SELECT event_id FROM processed_events WHERE consumer = 'p'");
  expect(left.rows.map((r) => r.event_id)).toEqual(['new-1']);
});

it("the scheduled inbox retention purges only its own consumers' rows past the horizon, and records the run", async () => {
  await pool.query(
    `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
       ('svc.critical', 'c-old', now() - interval '3 days'), ('svc.critical', 'c-edge', now() - interval '47 hours'),
       ('svc.standard', 's-old', now() - interval '30 days'), ('svc.standard', 's-new', now()),
       ('other.queue', 'x-old', now() - interval '30 days')`,
  );
  const job = inboxRetentionJob({
    name: 'inbox-retention:svc',
    intervalMs: 3_600_000,
    retentionMs: 2 * 86_400_000,
    consumers: ['svc.critical', 'svc.standard'],
    batchSize: 1,
  });
  const scheduler = createScheduler({ pool, logger: testLogger(), jobs: [job] });
  expect(await scheduler.runOnce('inbox-retention:svc')).toMatchObject({
    status: 'ran',
    outcome: 'succeeded',
    counts: { deleted: 2 },
  });
  await scheduler.stop();
  const left = await pool.query(
    "SELECT event_id FROM processed_events WHERE event_id IN ('c-old', 'c-edge', 's-old', 's-new', 'x-old') ORDER BY event_id",
  );
  expect(left.rows.map((r) => r.event_id)).toEqual(['c-edge', 's-new', 'x-old']);
  const runs = await pool.query("SELECT outcome, counts FROM scheduled_job_runs WHERE job = 'inbox-retention:svc'");
  expect(runs.rows).toEqual([{ outcome: 'succeeded', counts: { deleted: 2 } }]);
});

it('refuses an inbox retention job below the minimum horizon, and stops a purge whose signal aborted', async () => {
  expect(() =>
    inboxRetentionJob({ name: 'inbox-retention:short', intervalMs: 60_000, retentionMs: 3_600_000, consumers: ['q'] }),
  ).toThrow(/below the minimum/);
  await pool.query(
    "INSERT INTO processed_events (consumer, event_id, processed_at) VALUES ('aborted', 'a-1', now() - interval '9 days')",
  );
  const controller = new AbortController();
  controller.abort(new Error('stopping'));
  await expect(purgeProcessedEvents(pool, { consumers: ['aborted'], signal: controller.signal })).rejects.toThrow(
    'stopping',
  );
  expect((await pool.query("SELECT 1 FROM processed_events WHERE consumer = 'aborted'")).rowCount).toBe(1);
});

it('counts what a purge would delete without deleting, and reads when each consumer handled an event', async () => {
  await pool.query(
    "INSERT INTO processed_events (consumer, event_id, processed_at) VALUES ('q1', 'e-old', now() - interval '10 days'), ('q2', 'e-old', now() - interval '9 days'), ('q1', 'e-new', now())",
  );
  expect(await countPurgeableProcessedEvents(pool, { olderThanMs: 8 * 86_400_000, consumers: ['q1', 'q2'] })).toBe(2);
  expect(await countPurgeableProcessedEvents(pool, { olderThanMs: 8 * 86_400_000, consumers: ['q2'] })).toBe(1);
  await expect(countPurgeableProcessedEvents(pool, { olderThanMs: 60_000 })).rejects.toThrow(/below the minimum/);
  const handled = await processedAtBy(pool, ['q1', 'q2', 'q3'], 'e-old');
  expect([...handled.keys()].sort()).toEqual(['q1', 'q2']);
  // The time the row holds, read back as it is stored (no margin against the test's own clock).
  const stored = await pool.query<{ at: Date }>(
    "SELECT processed_at AS at FROM processed_events WHERE consumer = 'q1' AND event_id = 'e-old'",
  );
  expect(handled.get('q1')?.toISOString()).toBe(stored.rows[0].at.toISOString());
  expect([...(await processedAtBy(pool, ['q1', 'q2'], 'e-new')).keys()]).toEqual(['q1']);
  // Counting deleted nothing.
  const left = await pool.query("SELECT count(*)::int AS n FROM processed_events WHERE consumer IN ('q1', 'q2')");
  expect(left.rows[0].n).toBe(3);
});
