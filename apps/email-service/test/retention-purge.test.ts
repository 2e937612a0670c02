// The purge of the email tables (store/retention.ts), which the reconciler schedules as
// `retention.email` (its own test runs the job), against a private migrated database: what it
// deletes, what it must keep, and the horizon it never goes below.
import type { Pool } from 'pg';
import { createPgPool } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { purgeEmailHistory } from '../src';
import { recordRetentionHorizon } from '../src/store/horizon';
import { purgeEmailTables } from '../src/store/retention';

const DAY = 86_400_000;
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('email_retention_purge');
  pool = createPgPool(db.url, { max: 4 });
});

afterAll(async () => {
  await pool.end();
  await db.drop();
});

/** A ledger row `key` in `state`, created `daysAgo` days ago (its window, if any). */
async function delivery(
  key: string,
  state: string,
  daysAgo: number,
  channel = 'immediate',
  windowId: string | null = null,
): Promise<void> {
  await pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, state, digest_window_id, created_at, updated_at)
     VALUES ($1, $2::email_delivery_channel, 'u1', $1 || '@test', $3::email_delivery_state, $5::bigint,
             now() - $4::float8 * interval '1 day', now() - $4::float8 * interval '1 day')`,
    [key, channel, state, daysAgo, windowId],
  );
}

/** A digest window of user `user` that ended `daysAgo` days ago, with `items` items; returns its id. */
async function digestWindow(user: string, status: string, daysAgo: number, items: number): Promise<string> {
  const res = await pool.query<{ id: string }>(
    `INSERT INTO email_digest_windows (user_id, window_start, window_end, status)
     VALUES ($1, date_trunc('day', now()) - ($2 + 1) * interval '1 day', date_trunc('day', now()) - $2 * interval '1 day', $3::email_digest_window_status)
     RETURNING id::text AS id`,
    [user, daysAgo, status],
  );
  const id = res.rows[0].id;
  for (let i = 0; i < items; i++) {
    await pool.query(
      `INSERT INTO email_digest_items (idempotency_key, window_id, user_id, notification_id, notification_type, resource_type, resource_id, occurred_at)
       VALUES ($1, $2, $3, 'n', 'reaction', 'post', 'p', now())`,
      [`${user}-${id}-${i}`, id, user],
    );
  }
  return id;
}

const keys = async () =>
  (await pool.query<{ k: string }>('SELECT idempotency_key AS k FROM email_deliveries ORDER BY 1')).rows.map(
    (r) => r.k,
  );
const windowUsers = async () =>
  (await pool.query<{ u: string }>('SELECT user_id AS u FROM email_digest_windows ORDER BY 1')).rows.map((r) => r.u);

beforeEach(async () => {
  await pool.query('TRUNCATE email_deliveries, email_digest_items, email_digest_windows, retention_horizons');
});

it('deletes finished ledger rows and closed digest windows past the horizon, and nothing else', async () => {
  // Past the 30-day horizon and finished: deleted.
  await delivery('old-sent', 'sent', 31);
  await delivery('old-failed', 'failed', 45);
  await delivery('old-suppressed', 'suppressed', 31);
  // Past the horizon but work in progress: kept, whatever its age.
  await delivery('old-pending', 'pending', 60);
  await delivery('old-sending', 'sending', 60);
  // Finished but inside the horizon: kept (a duplicate may still arrive and must find it).
  await delivery('recent-sent', 'sent', 29);
  await delivery('recent-failed', 'failed', 1);

  const flushedOld = await digestWindow('flushed-old', 'flushed', 31, 3);
  await delivery(`digest:flushed-old`, 'sent', 31, 'digest', flushedOld);
  await digestWindow('empty-old', 'empty', 40, 2);
  const retrying = await digestWindow('flushed-old-retrying', 'flushed', 31, 2);
  await delivery('digest:retrying', 'pending', 31, 'digest', retrying);
  await digestWindow('open-old', 'open', 31, 1); // a flusher that never ran: not ours to delete
  await digestWindow('flushed-recent', 'flushed', 29, 1);

  const counts = await purgeEmailTables(pool, { olderThanMs: 30 * 86_400_000, batchSize: 2 });
  expect(counts).toEqual({ deliveries: 4, digestWindows: 2, digestItems: 5 });
  expect(await keys()).toEqual(['digest:retrying', 'old-pending', 'old-sending', 'recent-failed', 'recent-sent']);
  expect(await windowUsers()).toEqual(['flushed-old-retrying', 'flushed-recent', 'open-old']);
  const items = await pool.query<{ u: string; n: number }>(
    'SELECT user_id AS u, count(*)::int AS n FROM email_digest_items GROUP BY 1 ORDER BY 1',
  );
  expect(items.rows).toEqual([
    { u: 'flushed-old-retrying', n: 2 },
    { u: 'flushed-recent', n: 1 },
    { u: 'open-old', n: 1 },
  ]);
});

it('refuses a horizon below the minimum', async () => {
  await delivery('sent-3-days-ago', 'sent', 3);
  await expect(purgeEmailTables(pool, { olderThanMs: 86_400_000, batchSize: 10 })).rejects.toThrow(/below the minimum/);
  expect(await keys()).toEqual(['sent-3-days-ago']);
});

it('never goes below the horizon this service recorded at start, whatever the scheduler asks', async () => {
  await delivery('sent-10-days-ago', 'sent', 10);
  await delivery('sent-20-days-ago', 'sent', 20);
  // Before any start recorded one, the scheduler's horizon holds (dry run: counted, nothing deleted).
  expect(await purgeEmailHistory(pool, { olderThanMs: 7 * DAY, batchSize: 10, dryRun: true })).toEqual({
    deliveries: 2,
    digestWindows: 0,
    digestItems: 0,
    horizon_days: 7,
  });
  // This service runs with EMAIL_RETENTION_DAYS=14; the scheduler says 7.
  await recordRetentionHorizon(pool, 14 * DAY);
  expect(await purgeEmailHistory(pool, { olderThanMs: 7 * DAY, batchSize: 10 })).toEqual({
    deliveries: 1,
    digestWindows: 0,
    digestItems: 0,
    horizon_days: 14,
  });
  expect(await keys()).toEqual(['sent-10-days-ago']);
  // A longer horizon asked by the scheduler wins over a shorter recorded one.
  expect(await purgeEmailHistory(pool, { olderThanMs: 30 * DAY, batchSize: 10 })).toMatchObject({
    deliveries: 0,
    horizon_days: 30,
  });
});
