// The retention jobs against a private migrated database: what each deletes, what it must keep, and
// the runs they record. What the email purge keeps is email-service's own test (retention-purge.test.ts).
import type { Pool } from 'pg';
import { createPgPool } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import {
  DLQ_RETENTION_JOB,
  EMAIL_RETENTION_JOB,
  FEED_RETENTION_JOB,
  INBOX_RETENTION_JOB,
  OUTBOX_RETENTION_JOB,
} from '../src/jobs/retention';
import { startReconciler } from './harness';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('email_retention');
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

const keys = async () =>
  (await pool.query<{ k: string }>('SELECT idempotency_key AS k FROM email_deliveries ORDER BY 1')).rows.map(
    (r) => r.k,
  );
beforeEach(async () => {
  await pool.query(
    'TRUNCATE email_deliveries, email_digest_items, email_digest_windows, scheduled_job_runs, processed_events, outbox_messages',
  );
});

it('runs as a scheduled job from the configuration, once per interval across replicas, and records the run', async () => {
  await delivery('sent-10-days-ago', 'sent', 10);
  await delivery('sent-6-days-ago', 'sent', 6);
  const env = { EMAIL_RETENTION_DAYS: '7', RETENTION_INTERVAL_MS: '1h', RETENTION_BATCH_SIZE: '100' };
  const rc = await startReconciler(db, undefined, { env });
  const other = await startReconciler(db, undefined, { env });
  try {
    // A dry run counts and deletes nothing.
    expect(await rc.svc.scheduler.runOnce(EMAIL_RETENTION_JOB, { dryRun: true })).toMatchObject({
      status: 'ran',
      counts: { deliveries: 1, dry_run: 1 },
    });
    expect(await keys()).toEqual(['sent-10-days-ago', 'sent-6-days-ago']);
    await pool.query('TRUNCATE scheduled_job_runs');
    expect(await rc.svc.scheduler.runOnce(EMAIL_RETENTION_JOB)).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deliveries: 1, digestWindows: 0, digestItems: 0, horizon_days: 7 },
    });
    // A second replica (or this one, early) finds it already done for this interval.
    expect(await other.svc.scheduler.runOnce(EMAIL_RETENTION_JOB)).toMatchObject({
      status: 'skipped',
      reason: 'not_due',
    });
    expect(await keys()).toEqual(['sent-6-days-ago']);
    const runs = await pool.query('SELECT job, outcome, counts FROM scheduled_job_runs');
    expect(runs.rows).toEqual([
      {
        job: EMAIL_RETENTION_JOB,
        outcome: 'succeeded',
        counts: { deliveries: 1, digestWindows: 0, digestItems: 0, horizon_days: 7 },
      },
    ]);
    expect(await rc.registry.getSingleMetricAsString('reconciler_job_runs_total')).toMatch(
      /job="retention.email",outcome="succeeded"} 2/,
    );
  } finally {
    await other.close();
    await rc.close();
  }
});

it("never purges email rows younger than the horizon email-service recorded, whatever the reconciler's own setting", async () => {
  await delivery('sent-10-days-ago', 'sent', 10);
  await delivery('sent-20-days-ago', 'sent', 20);
  // email-service runs with EMAIL_RETENTION_DAYS=14 (it records that at start); the reconciler says 7.
  await pool.query(`INSERT INTO retention_horizons (name, horizon_ms, set_by) VALUES ('email', $1, 'email-service')`, [
    14 * 86_400_000,
  ]);
  const rc = await startReconciler(db, undefined, { env: { EMAIL_RETENTION_DAYS: '7' } });
  try {
    expect(await rc.svc.scheduler.runOnce(EMAIL_RETENTION_JOB)).toMatchObject({
      status: 'ran',
      counts: { deliveries: 1, horizon_days: 14 },
    });
  } finally {
    await rc.close();
    await pool.query('TRUNCATE retention_horizons');
  }
  expect(await keys()).toEqual(['sent-10-days-ago']);
});

it("purges every consumer's inbox rows past INBOX_RETENTION_DAYS and sent outbox rows past OUTBOX_RETENTION_DAYS, never an unsent one", async () => {
  await pool.query(
    `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
       ('notification-service.critical', 'old', now() - interval '8 days'), ('email-service.send', 'old-too', now() - interval '30 days'),
       ('notification-service.standard', 'recent', now() - interval '6 days')`,
  );
  await pool.query(
    `INSERT INTO outbox_messages (producer, aggregate_id, event_id, event_type, routing_key, payload, created_at, sent_at) VALUES
       ('p', 'a', gen_random_uuid(), 't', 't', '{}', now() - interval '10 days', now() - interval '10 days'),
       ('p', 'a', gen_random_uuid(), 't', 't', '{}', now() - interval '1 day', now() - interval '1 day'),
       ('q', 'b', gen_random_uuid(), 'unsent', 't', '{}', now() - interval '10 days', NULL)`,
  );
  const rc = await startReconciler(db, undefined, { env: { INBOX_RETENTION_DAYS: '7', OUTBOX_RETENTION_DAYS: '3' } });
  try {
    expect(await rc.svc.scheduler.runOnce(INBOX_RETENTION_JOB)).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deleted: 2 },
    });
    expect(await rc.svc.scheduler.runOnce(OUTBOX_RETENTION_JOB)).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deleted: 1 },
    });
  } finally {
    await rc.close();
  }
  expect((await pool.query('SELECT event_id FROM processed_events')).rows).toEqual([{ event_id: 'recent' }]);
  expect(
    (await pool.query('SELECT event_type, sent_at IS NULL AS unsent FROM outbox_messages ORDER BY created_at')).rows,
  ).toEqual([
    { event_type: 'unsent', unsent: true },
    { event_type: 't', unsent: false },
  ]);
});

it('purges dead-lettered messages in a final state past DLQ_RETENTION_DAYS, never a pending or recent one, and keeps the audit', async () => {
  // [message id, state, days since the last action (null: never acted on), days since ingest]
  const rows: Array<[string, string, number | null, number]> = [
    ['replayed-old', 'replayed', 8, 40],
    ['discarded-old', 'discarded', 20, 40],
    ['replayed-recent', 'replayed', 6, 40],
    ['discarded-recent', 'discarded', 1, 2],
    ['pending-old', 'pending', null, 90],
    ['replaying-old', 'replaying', 30, 90],
  ];
  for (const [id, state, acted, ingested] of rows) {
    await pool.query(
      `INSERT INTO dlq_messages (queue, original_queue, message_id, dead_lettered_at, properties, headers, body, error_class, error_message, error_kind, fingerprint, state, ingested_at, acted_at)
       VALUES ('q.dlq', 'q', $1, now() - $4::float8 * interval '1 day', '{}', '{}', '\\x7b7d', 'PermanentError', 'bad', 'permanent', 'fp', $2::dlq_message_state,
               now() - $4::float8 * interval '1 day', now() - $3::float8 * interval '1 day')`,
      [id, state, acted, ingested],
    );
  }
  // The audit of the discard that put 'discarded-old' in its final state.
  await pool.query(
    `WITH op AS (INSERT INTO dlq_operations (action, requested_by, selection, matched, state) VALUES ('discard', 'frank', '{}', 1, 'done') RETURNING id)
     INSERT INTO dlq_operation_items (operation_id, message_id, result) SELECT op.id, m.id, 'discarded' FROM op, dlq_messages m WHERE m.message_id = 'discarded-old'`,
  );
  const rc = await startReconciler(db, undefined, { env: { DLQ_RETENTION_DAYS: '7' } });
  try {
    expect(await rc.svc.scheduler.runOnce(DLQ_RETENTION_JOB, { dryRun: true })).toMatchObject({
      status: 'ran',
      counts: { deleted: 2 },
    });
    expect((await pool.query('SELECT count(*)::int AS n FROM dlq_messages')).rows[0].n).toBe(rows.length);
    expect(await rc.svc.scheduler.runOnce(DLQ_RETENTION_JOB, { force: true })).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { deleted: 2 },
    });
  } finally {
    await rc.close();
  }
  expect(
    (await pool.query('SELECT message_id FROM dlq_messages ORDER BY message_id')).rows.map((r) => r.message_id),
  ).toEqual(['discarded-recent', 'pending-old', 'replayed-recent', 'replaying-old']);
  expect(
    (
      await pool.query(
        `SELECT o.requested_by, i.result FROM dlq_operations o JOIN dlq_operation_items i ON i.operation_id = o.id`,
      )
    ).rows,
  ).toEqual([{ requested_by: 'frank', result: 'discarded' }]);
});

it("runs feed-service's retention from FEED_RETENTION_DAYS: done fan-outs past it go, with their chunks", async () => {
  // What the purge keeps and why is feed-service's own test (apps/feed-service/test/retention.test.ts).
  for (const [post, doneDaysAgo] of [
    ['done-20-days-ago', 20],
    ['done-5-days-ago', 5],
  ] as const) {
    await pool.query(
      `INSERT INTO feed_fanout_jobs (post_id, author_id, published_at, active_since, chunks_total, chunks_done, planned_at, done_at)
       VALUES ($1, 'a', now() - interval '30 days', now() - interval '37 days', 1, 1, now() - interval '30 days', now() - $2::float8 * interval '1 day')`,
      [post, doneDaysAgo],
    );
    await pool.query(
      `INSERT INTO feed_fanout_chunks (post_id, chunk_no, after_follower, through_follower, attempts, done_at) VALUES ($1, 0, '', 'z', 1, now())`,
      [post],
    );
  }
  const rc = await startReconciler(db, undefined, { env: { FEED_RETENTION_DAYS: '7' } });
  try {
    expect(await rc.svc.scheduler.runOnce(FEED_RETENTION_JOB)).toMatchObject({
      status: 'ran',
      outcome: 'succeeded',
      counts: { fanoutJobs: 1, fanoutChunks: 1, posts: 0 },
    });
  } finally {
    await rc.close();
  }
  expect((await pool.query('SELECT post_id FROM feed_fanout_chunks')).rows).toEqual([{ post_id: 'done-5-days-ago' }]);
});
