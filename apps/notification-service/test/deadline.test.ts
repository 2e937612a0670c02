import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { eventually } from '@community/testing';
import { mention, startHarness, type Harness } from './harness';

/**
 * The batch deadline cancels the database work. A statement slowed far past a short deadline (a
 * trigger this test installs sleeps in every insert of notifications) must be cancelled: nothing of
 * the batch commits, the message goes to a retry tier, and no batch transaction ever starts while
 * another is open (the consumers' concurrency bound is 1 here, on the only queue that gets traffic).
 * Without the cancel, the first transaction sleeps on after the deadline and commits late, while its
 * retry already runs beside it.
 *
 * Everything is recorded by the database itself, at the moment it happens, in sequences (nextval
 * is not rolled back with the transaction that called it): no sampling, no timing.
 *   test_batch_starts  +1 per batch transaction's claim statement (a statement trigger on processed_events)
 *   test_overlaps      +1 when a batch transaction starts while another one of the service is open
 *   test_slow_entered  +1 per insert of notifications that entered the slow sleep
 *   test_slow_finished +1 per insert that finished the sleep (i.e. was not cancelled by the deadline)
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
    CREATE SEQUENCE test_batch_starts; CREATE SEQUENCE test_overlaps;
    CREATE SEQUENCE test_slow_entered; CREATE SEQUENCE test_slow_finished;
    CREATE FUNCTION test_slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM test_slow_inserts) THEN
          PERFORM nextval('test_slow_entered');
          PERFORM pg_sleep(${SLEEP_S});
          PERFORM nextval('test_slow_finished');
        END IF;
        RETURN NULL;
      END $$;
    CREATE TRIGGER test_slow_insert BEFORE INSERT ON notification_items FOR EACH STATEMENT EXECUTE FUNCTION test_slow_insert();
    CREATE FUNCTION test_batch_start() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM nextval('test_batch_starts');
        -- Another batch transaction of the service still open (its current or last statement is one
        -- of the batch's two; pg_stat_activity shows the start of the text only).
        IF EXISTS (SELECT 1 FROM pg_stat_activity
                   WHERE datname = current_database() AND application_name = 'notification-service'
                     AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
                     AND (query LIKE 'WITH claimed AS%' OR query LIKE 'WITH input AS%')) THEN
          PERFORM nextval('test_overlaps');
        END IF;
        RETURN NULL;
      END $$;
    CREATE TRIGGER test_batch_start BEFORE INSERT ON processed_events FOR EACH STATEMENT EXECUTE FUNCTION test_batch_start();`);
});
afterAll(async () => {
  await observer.end();
  await h.close();
});

/** How many times a sequence was advanced (0 if never). */
async function count(sequence: string): Promise<number> {
  const { rows } = await observer.query(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${sequence}`);
  return Number(rows[0].n);
}

/** The batch transactions open now (as the trigger above defines them). */
async function openBatches(): Promise<number> {
  const { rows } = await observer.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'notification-service'
       AND xact_start IS NOT NULL AND (query LIKE 'WITH claimed AS%' OR query LIKE 'WITH input AS%')`,
  );
  return rows[0].n;
}

const rowsOf = async (user: string) =>
  Number((await observer.query('SELECT count(*) FROM notification_items WHERE user_id = $1', [user])).rows[0].count);

it('a statement slowed past the deadline is cancelled: nothing commits, the message is retried, the bound holds', async () => {
  const user = `u-${randomUUID()}`;
  await observer.query('INSERT INTO test_slow_inserts VALUES (true)');
  await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user));

  // Two attempts hit the slow insert: the first one, and the retry the deadline sent it to (or, were
  // the deadline ignored, the first one finishes its sleep: the assertions below then say so).
  await eventually(
    'two attempts in the slow insert',
    async () => (await count('test_slow_entered')) >= 2 || (await count('test_slow_finished')) > 0,
    30_000,
    100,
  );
  // Then every attempt has ended (cancelled, or, were the deadline ignored, finished and committed).
  await eventually('no batch transaction open', async () => (await openBatches()) === 0, 30_000, 100);
  expect(await count('test_slow_finished')).toBe(0); // each slow statement was cancelled in its sleep
  expect(await rowsOf(user)).toBe(0); // and nothing of it committed
  await observer.query('DELETE FROM test_slow_inserts');

  // Once the database is fast again, the next retry commits it, exactly once.
  await eventually('the mention committed by a retry', async () => (await rowsOf(user)) === 1, 30_000, 100);
  const attempts = await count('test_batch_starts');
  expect(attempts).toBeGreaterThanOrEqual(3); // two cancelled attempts, then the one that committed
  // A retry that waits on an earlier attempt's claim ends after it: at the commit, every attempt has
  // ended, and none finished its sleep or ran beside another.
  expect(await count('test_slow_finished')).toBe(0);
  expect(await count('test_overlaps')).toBe(0);
  expect(await count('test_slow_entered')).toBeLessThan(attempts); // the last, committed attempt was not slowed
  const counter = await observer.query('SELECT unread_count FROM notification_counters WHERE user_id = $1', [user]);
  expect(counter.rows[0].unread_count).toBe(1);
  // One notification.created, from the attempt that committed (the cancelled ones announced nothing).
  await eventually('its notification.created', async () => h.createdFor(user).length >= 1, 10_000, 20);
  expect(new Set(h.createdFor(user).map((d) => d.notificationId)).size).toBe(1);
}, 90_000);
