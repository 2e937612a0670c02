import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { createPgPool, withTransaction } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { claimAndLockInboxes, writeNotifications, type NotificationRow } from '../src/store/ingest';

/**
 * The batch's write statement finds the rows it may replace and the counters it moves through their
 * indexes, whatever the planner believes about the tables. Its input is a JSON document, which
 * PostgreSQL estimates at 100 rows however many it holds; with statistics that lag a table's growth
 * (a new deployment, a burst, here: autovacuum off and never analysed) the statement used to scan
 * notification_items whole on every batch (docs/BENCHMARKS.md, 2026-12-07). The scans are counted
 * by PostgreSQL itself for the test's own transaction (pg_stat_xact_user_tables).
 */
let db: TestDatabase;
let pool: Pool;
const USERS = 20_000;

beforeAll(async () => {
  db = await createTestDatabase('ns_write_plan');
  pool = createPgPool(db.url, { max: 2 });
  await pool.query(`ALTER TABLE notification_items SET (autovacuum_enabled = false);
                    ALTER TABLE notification_counters SET (autovacuum_enabled = false)`);
  await pool.query(
    `INSERT INTO notification_counters (user_id, unread_count) SELECT 'u' || g, 1 FROM generate_series(1, ${USERS}) g`,
  );
  await pool.query(
    `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, email_channel,
                                     source_event_id, created_version, state_version)
     SELECT 'u' || g, 'mention', 'k' || g, 's' || g, 'comment', 'c' || g, 'immediate', 'e' || g, 1, 1
     FROM generate_series(1, ${USERS}) g`,
  );
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

const mention = (userId: string): NotificationRow => {
  const id = randomUUID();
  return {
    userId,
    type: 'mention',
    idempotencyKey: `mention:${id}`,
    slotKey: `slot:${id}`,
    slotRank: 2,
    actorId: 'actor-1',
    resourceType: 'comment',
    resourceId: id,
    subjects: [`comment:${id}`],
    occurredAt: new Date().toISOString(),
    id,
    inApp: true,
    emailChannel: 'immediate',
    push: true,
    sourceEventId: randomUUID(),
    correlationId: id,
  };
};

it('a batch of six mentions into a 20,000-row inbox table scans neither notification_items nor notification_counters', async () => {
  const rows = ['u7', 'u123', 'u4500', 'u9999', 'u15000', 'u19999'].map(mention);
  const { scans, written } = await withTransaction(pool, async (tx) => {
    const { inboxes } = await claimAndLockInboxes(
      tx,
      'write-plan-test',
      rows.map((r) => r.sourceEventId),
      rows.map((r) => r.userId),
    );
    const { written } = await writeNotifications(tx, rows, inboxes);
    const { rows: stats } = await tx.query<{ relname: string; seq_scan: string }>(
      `SELECT relname, seq_scan FROM pg_stat_xact_user_tables
       WHERE relname IN ('notification_items', 'notification_counters') ORDER BY relname`,
    );
    return { scans: Object.fromEntries(stats.map((s) => [s.relname, Number(s.seq_scan)])), written };
  });
  expect(written.filter((w) => w.inserted === true)).toHaveLength(6);
  expect(scans).toEqual({ notification_counters: 0, notification_items: 0 });
  // And the effects are the ones a user sees: each of them one more unread.
  const { rows: counts } = await pool.query<{ unread_count: number }>(
    `SELECT unread_count FROM notification_counters WHERE user_id = ANY ($1::text[])`,
    [rows.map((r) => r.userId)],
  );
  expect(counts.map((c) => c.unread_count)).toEqual([2, 2, 2, 2, 2, 2]);
});
