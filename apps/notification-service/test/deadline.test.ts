import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { eventually } from '@community/testing';
import { mention, startHarness, type Harness } from './harness';

/**
 * The batch deadline cancels the database work. A statement slowed far past a short deadline (a
 * trigger this test installs sleeps in every insert of notifications) must be cancelled: nothing of
 * the batch commits, the message goes to a retry tier, and at no moment do more batch transactions
 * run than the consumers' concurrency bound (1 here, on the only queue that gets traffic). Without
 * the cancel, the first transaction sleeps on after the deadline and commits late, while its retry
 * already runs beside it.
 */
const DEADLINE_MS = 1500;
const SLEEP_S = 3;

let h: Harness;
let observer: pg.Client;

beforeAll(async () => {
  h = await startHarness('deadline', { batchTimeoutMs: DEADLINE_MS, batchConcurrency: 1 });
  observer = new pg.Client({ connectionString: h.db.url, application_name: 'deadline-test' });
  await observer.connect();
  await observer.query(`
    CREATE TABLE test_slow_inserts (on_ boolean);
    CREATE FUNCTION test_slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM test_slow_inserts) THEN PERFORM pg_sleep(${SLEEP_S}); END IF;
        RETURN NULL;
      END $$;
    CREATE TRIGGER test_slow_insert BEFORE INSERT ON notification_items FOR EACH STATEMENT EXECUTE FUNCTION test_slow_insert();`);
});
afterAll(async () => {
  await observer.end();
  await h.close();
});

/**
 * The batch transactions running now: the service's backends inside a transaction whose current or
 * last statement is one of the batch's two (pg_stat_activity shows the start of the text only).
 */
async function runningBatches(): Promise<Array<{ pid: number; xact_start: string }>> {
  const { rows } = await observer.query(
    `SELECT pid, xact_start::text FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'notification-service'
       AND xact_start IS NOT NULL AND (query LIKE 'WITH claimed AS%' OR query LIKE 'WITH input AS%')`,
  );
  return rows;
}

it('a statement slowed past the deadline is cancelled: nothing commits, the message is retried, the bound holds', async () => {
  const user = `u-${randomUUID()}`;
  await observer.query('INSERT INTO test_slow_inserts VALUES (true)');
  await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user));

  // Slow for two deadlines and a retry: the first attempt and its retry both hit the sleep.
  let most = 0;
  const attempts = new Set<string>();
  const committedWhileSlow: number[] = [];
  const slowUntil = Date.now() + 2 * DEADLINE_MS + 1500;
  while (Date.now() < slowUntil) {
    const running = await runningBatches();
    most = Math.max(most, running.length);
    for (const r of running) attempts.add(`${r.pid}@${r.xact_start}`);
    const rows = Number((await observer.query('SELECT count(*) FROM notification_items WHERE user_id = $1', [user])).rows[0].count);
    if (rows > 0) committedWhileSlow.push(rows);
    await sleep(20);
  }
  await observer.query('DELETE FROM test_slow_inserts');

  // Let any transaction that ignored the deadline finish its sleep and commit, then look again.
  await sleep(SLEEP_S * 1000 - 500);
  const lateRows = Number((await observer.query('SELECT count(*) FROM notification_items WHERE user_id = $1', [user])).rows[0].count);

  expect(attempts.size).toBeGreaterThanOrEqual(2); // the deadline sent it to a retry tier, and the retry ran
  expect(most).toBe(1);
  expect(committedWhileSlow).toEqual([]);
  expect(lateRows).toBe(0); // still nothing: every slow attempt was rolled back, not finished late

  // Once the database is fast again, the next retry commits it, exactly once.
  await eventually('the mention committed by a retry', async () =>
    Number((await observer.query('SELECT count(*) FROM notification_items WHERE user_id = $1', [user])).rows[0].count) === 1, 15_000, 50);
  const counter = await observer.query('SELECT unread_count FROM notification_counters WHERE user_id = $1', [user]);
  expect(counter.rows[0].unread_count).toBe(1);
  const events = await observer.query("SELECT count(*) FROM outbox_messages WHERE producer = 'notification-service' AND aggregate_id = $1", [user]);
  expect(Number(events.rows[0].count)).toBe(1);
}, 40_000);
