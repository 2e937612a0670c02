import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { loadNotificationConfig } from '../src/config';
import { BATCH_TIMEOUT_MS, CRITICAL_QUEUE, STANDARD_QUEUE } from '../src/queues';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { createNotificationRetention } from '../src/retention';
import { batchItems, countersAndRecount, mention, startHarness, type Harness } from './harness';

/**
 * Inbox retention as notification-service runs it, and why purging the inbox never lets a late
 * duplicate through: the notification's unique slot key, never purged, absorbs it.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('retention', { amqp: false });
});
afterAll(async () => h.close());

const bctx = { logger: testLogger(), signal: new AbortController().signal, queue: CRITICAL_QUEUE, handler: 'test' };
const outboxCount = async (userId: string) =>
  Number((await h.pool.query("SELECT count(*) FROM outbox_messages WHERE producer = 'notification-service' AND aggregate_id = $1", [userId])).rows[0].count);

it("purges this service's inbox rows past INBOX_RETENTION_DAYS, and a copy replayed after the purge changes nothing", async () => {
  const handle = createNotificationBatchHandler({ pool: h.pool, consumer: CRITICAL_QUEUE, metrics: h.metrics, batchTimeoutMs: BATCH_TIMEOUT_MS });
  const event = mention('c-retention', 'bob', 'carol');
  await handle(batchItems([event]), bctx);
  expect((await h.pool.query('SELECT 1 FROM notification_items WHERE user_id = $1', ['carol'])).rowCount).toBe(1);
  expect(await outboxCount('carol')).toBe(1);

  // Eight days on: the inbox row is past the 7-day horizon. Rows of other consumers, and recent ones, stay.
  await h.pool.query("UPDATE processed_events SET processed_at = now() - interval '8 days' WHERE event_id = $1", [event.id]);
  await h.pool.query(
    `INSERT INTO processed_events (consumer, event_id, processed_at) VALUES
       ($1, 'standard-old', now() - interval '30 days'), ($1, 'standard-recent', now() - interval '6 days'),
       ('feed-service.activity', 'not-ours', now() - interval '30 days')`,
    [STANDARD_QUEUE],
  );
  const config = loadNotificationConfig({ INBOX_RETENTION_DAYS: '7' });
  const retention = createNotificationRetention({ pool: h.pool, logger: testLogger(), registry: new Registry(), config });
  expect(await retention.runOnce('inbox-retention:notification-service')).toMatchObject({ status: 'ran', outcome: 'succeeded', counts: { deleted: 2 } });
  await retention.stop();
  const left = await h.pool.query<{ event_id: string }>('SELECT event_id FROM processed_events ORDER BY event_id');
  expect(left.rows.map((r) => r.event_id)).toEqual(['not-ours', 'standard-recent']);

  // The same event again, as a DLQ replay or a late relay would bring it: it passes the inbox
  // (its row is gone) and meets the slot key: no second row, count or notification.created.
  const [outcome] = (await handle(batchItems([event]), bctx)) ?? [];
  expect(outcome).not.toBeInstanceOf(Error);
  expect((await h.pool.query('SELECT 1 FROM notification_items WHERE user_id = $1', ['carol'])).rowCount).toBe(1);
  expect(await outboxCount('carol')).toBe(1);
  expect((await countersAndRecount(h.pool)).find((c) => c.user_id === 'carol')).toEqual({ user_id: 'carol', counter: 1, recount: 1 });
});
