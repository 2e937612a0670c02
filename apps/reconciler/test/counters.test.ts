// The unread-counter repair against a private database: drift injected by hand is found and set
// back exactly, with one audit row per repaired user, and two replicas run a job once.
import { advisoryLockKey } from '@community/db';
import { RECOUNT_RECENT_JOB, RECOUNT_SWEEP_JOB } from '../src/jobs/counters';
import {
  bearer,
  countersAndRecount,
  createTestDatabase,
  seedInboxes,
  startReconciler,
  type Reconciler,
} from './harness';
import type { TestDatabase } from '@community/testing';

let db: TestDatabase;
let rc: Reconciler;

beforeAll(async () => {
  db = await createTestDatabase('rc_counters');
  rc = await startReconciler(db, undefined);
});
afterAll(async () => {
  await rc?.close();
  await db?.drop();
});
beforeEach(async () => {
  await rc.svc.pool.query(
    'TRUNCATE notification_items, notification_counters, counter_repairs, scheduled_job_runs, reconciler_cursors',
  );
});

const audit = async () =>
  (
    await rc.svc.pool.query<{ user_id: string; stored: number; recounted: number; source: string }>(
      'SELECT user_id, stored, recounted, source FROM counter_repairs ORDER BY user_id',
    )
  ).rows;

it('repairs injected drift exactly, audits each repair, and publishes the drift', async () => {
  const users = await seedInboxes(rc.svc, 120, 3);
  // Drift: too high, too low, negative; one user's counter untouched.
  await rc.svc.pool.query(
    `UPDATE notification_counters SET unread_count = CASE user_id WHEN $1 THEN 10 WHEN $2 THEN 0 ELSE -2 END WHERE user_id = ANY($3)`,
    [users[0], users[57], [users[0], users[57], users[119]]],
  );
  const attempt = await rc.svc.scheduler.runOnce(RECOUNT_SWEEP_JOB);
  expect(attempt).toMatchObject({
    status: 'ran',
    outcome: 'succeeded',
    counts: { checked: 120, drifted: 3, repaired: 3, batches: 3 },
  });
  expect((await countersAndRecount(rc.svc)).filter((r) => r.counter !== r.recount)).toEqual([]);
  expect(await audit()).toEqual([
    { user_id: users[0], stored: 10, recounted: 3, source: RECOUNT_SWEEP_JOB },
    { user_id: users[57], stored: 0, recounted: 3, source: RECOUNT_SWEEP_JOB },
    { user_id: users[119], stored: -2, recounted: 3, source: RECOUNT_SWEEP_JOB },
  ]);
  expect(await rc.registry.getSingleMetricAsString('reconciler_counter_drift_users')).toMatch(
    /reconciler_counter_drift_users 3/,
  );
  expect(await rc.registry.getSingleMetricAsString('reconciler_counter_drift_abs')).toMatch(
    /reconciler_counter_drift_abs_sum 15/,
  );
  expect(await rc.registry.getSingleMetricAsString('reconciler_counter_repairs_total')).toMatch(
    /reconciler_counter_repairs_total 3/,
  );
  const run = await rc.svc.pool.query('SELECT job, outcome, counts FROM scheduled_job_runs');
  expect(run.rows).toEqual([
    { job: RECOUNT_SWEEP_JOB, outcome: 'succeeded', counts: { checked: 120, drifted: 3, repaired: 3, batches: 3 } },
  ]);
  // A second sweep finds nothing: the repair was exact.
  expect(await rc.svc.scheduler.runOnce(RECOUNT_SWEEP_JOB, { force: true })).toMatchObject({ counts: { drifted: 0 } });
});

it('the incremental recount looks only at users whose counter changed within the window', async () => {
  const users = await seedInboxes(rc.svc, 10, 2);
  await rc.svc.pool.query(`UPDATE notification_counters SET updated_at = now() - interval '1 day'`);
  await rc.svc.pool.query(`UPDATE notification_counters SET unread_count = 9 WHERE user_id = ANY($1)`, [
    [users[1], users[2]],
  ]);
  await rc.svc.pool.query(`UPDATE notification_counters SET updated_at = now() WHERE user_id = $1`, [users[2]]);
  expect(await rc.svc.scheduler.runOnce(RECOUNT_RECENT_JOB)).toMatchObject({
    counts: { checked: 1, drifted: 1, repaired: 1 },
  });
  expect((await audit()).map((a) => a.user_id)).toEqual([users[2]]);
  expect((await countersAndRecount(rc.svc)).find((r) => r.user_id === users[1])).toEqual({
    user_id: users[1],
    counter: 9,
    recount: 2,
  });
});

it('a dry run reports the drift and changes nothing, through the API too', async () => {
  const users = await seedInboxes(rc.svc, 5, 1);
  await rc.svc.pool.query(`UPDATE notification_counters SET unread_count = 4 WHERE user_id = $1`, [users[3]]);
  const res = await rc.svc.app.inject({
    method: 'POST',
    url: `/v1/admin/jobs/${RECOUNT_SWEEP_JOB}/run?dryRun=true`,
    headers: bearer(rc.token()),
  });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({
    job: RECOUNT_SWEEP_JOB,
    outcome: 'succeeded',
    dryRun: true,
    counts: { checked: 5, drifted: 1, repaired: 0, dry_run: 1 },
  });
  const recount = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/recount',
    headers: bearer(rc.token()),
    payload: { dryRun: true },
  });
  expect(recount.json()).toMatchObject({
    mode: 'inline',
    dryRun: true,
    drifted: 1,
    drifts: [{ userId: users[3], stored: 4, recounted: 1 }],
  });
  expect(await audit()).toEqual([]);
  expect((await countersAndRecount(rc.svc)).find((r) => r.user_id === users[3])?.counter).toBe(4);
  // One user, for real.
  const one = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/recount',
    headers: bearer(rc.token()),
    payload: { userId: users[3] },
  });
  expect(one.json()).toMatchObject({
    checked: 1,
    repaired: 1,
    drifts: [{ userId: users[3], stored: 4, recounted: 1 }],
  });
  expect(await audit()).toEqual([{ user_id: users[3], stored: 4, recounted: 1, source: 'api:operator' }]);
});

it('two reconcilers run a job once: the second is refused by the lock or finds it done', async () => {
  await seedInboxes(rc.svc, 200, 1);
  const other = await startReconciler(db, undefined);
  try {
    const [a, b] = await Promise.all([
      rc.svc.scheduler.runOnce(RECOUNT_SWEEP_JOB),
      other.svc.scheduler.runOnce(RECOUNT_SWEEP_JOB),
    ]);
    expect([a.status, b.status].sort()).toEqual(['ran', 'skipped']);
    const runs = await rc.svc.pool.query('SELECT count(*)::int AS n FROM scheduled_job_runs WHERE job = $1', [
      RECOUNT_SWEEP_JOB,
    ]);
    expect(runs.rows[0].n).toBe(1);
    // An operator's "run now" while the other replica holds the job's lock is answered 409.
    const lockKey = advisoryLockKey(RECOUNT_SWEEP_JOB);
    const holder = await rc.svc.pool.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1::bigint)', [lockKey]);
      const res = await other.svc.app.inject({
        method: 'POST',
        url: `/v1/admin/jobs/${RECOUNT_SWEEP_JOB}/run`,
        headers: bearer(other.token()),
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('RC_JOB_BUSY');
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      holder.release();
    }
  } finally {
    await other.close();
  }
});

it('refuses the admin API without the admin scope, and names unknown jobs', async () => {
  const user = await rc.svc.app.inject({
    method: 'GET',
    url: '/v1/admin/jobs',
    headers: bearer(rc.token('someone', '')),
  });
  expect(user.statusCode).toBe(403);
  expect(user.json().code).toBe('RC_ADMIN_REQUIRED');
  const unknown = await rc.svc.app.inject({
    method: 'POST',
    url: '/v1/admin/jobs/nope/run',
    headers: bearer(rc.token()),
  });
  expect(unknown.statusCode).toBe(404);
  expect(unknown.json().message).toMatch(/no job named 'nope' \(known: counters.recount-recent, counters.sweep/);
  const jobs = await rc.svc.app.inject({ method: 'GET', url: '/v1/admin/jobs', headers: bearer(rc.token()) });
  expect(jobs.json().jobs.map((j: { job: string }) => j.job)).toEqual([
    'counters.recount-recent',
    'counters.sweep',
    'retention.inbox',
    'retention.email',
    'retention.outbox',
    'retention.dlq',
    'retention.counter-repairs',
    'retention.feed',
    'stuck-work',
    'feeds.check',
    'watchdog.queues',
  ]);
});
