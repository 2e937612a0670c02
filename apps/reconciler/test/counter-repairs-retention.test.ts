// retention.counter-repairs against a private migrated database: the audit of counter repairs keeps
// COUNTER_REPAIRS_RETENTION_DAYS of history, deletes what is older in bounded batches, and a dry run
// only counts.
import type { Pool } from 'pg';
import { createPgPool } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { loadReconcilerConfig } from '../src/config';
import { COUNTER_REPAIRS_RETENTION_JOB } from '../src/jobs/retention';
import { startReconciler } from './harness';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('rc_repairs_retention');
  pool = createPgPool(db.url, { max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** One audit row per user, repaired that many days ago. */
async function repairs(daysAgo: Record<string, number>): Promise<void> {
  await pool.query(
    `INSERT INTO counter_repairs (user_id, stored, recounted, source, repaired_at)
     SELECT u, 5, 3, 'counters.sweep', now() - d * interval '1 day' FROM unnest($1::text[], $2::float8[]) AS t(u, d)`,
    [Object.keys(daysAgo), Object.values(daysAgo)],
  );
}

const audited = async () =>
  (await pool.query<{ user_id: string }>('SELECT user_id FROM counter_repairs ORDER BY user_id')).rows.map(
    (r) => r.user_id,
  );

it('deletes audit rows older than COUNTER_REPAIRS_RETENTION_DAYS in batches and keeps the newer ones; a dry run only counts', async () => {
  await repairs({ 'a-400-days': 400, 'b-31-days': 31, 'c-30.5-days': 30.5, 'd-29-days': 29, 'e-today': 0 });
  const rc = await startReconciler(db, undefined, {
    env: { COUNTER_REPAIRS_RETENTION_DAYS: '30', RETENTION_BATCH_SIZE: '2' },
  });
  try {
    expect(await rc.svc.scheduler.runOnce(COUNTER_REPAIRS_RETENTION_JOB, { dryRun: true })).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deleted: 3, dry_run: 1 },
    });
    expect(await audited()).toHaveLength(5);
    // Three rows past the horizon at two per statement: two batches, the last one short.
    expect(await rc.svc.scheduler.runOnce(COUNTER_REPAIRS_RETENTION_JOB, { force: true })).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deleted: 3 },
    });
    expect(await audited()).toEqual(['d-29-days', 'e-today']);
  } finally {
    await rc.close();
  }
});

it('keeps 90 days by default and refuses a horizon under a day, naming the variable', () => {
  expect(loadReconcilerConfig({}).COUNTER_REPAIRS_RETENTION_DAYS).toBe(90);
  expect(() => loadReconcilerConfig({ COUNTER_REPAIRS_RETENTION_DAYS: '0' })).toThrow(/COUNTER_REPAIRS_RETENTION_DAYS/);
});
