import { testLogger } from '@community/testing';
import { BATCH_TIMEOUT_MS, CRITICAL_QUEUE } from '../src/queues';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { batchItems, countersAndRecount, mention, startHarness, type Harness } from './harness';

/**
 * Why purging the inbox never lets a late duplicate through: the notification's unique slot key,
 * never purged, absorbs it. (The purge itself is the reconciler's inbox-retention job,
 * apps/reconciler/test/retention.test.ts; here its effect is applied directly.)
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('retention', { amqp: false });
});
afterAll(async () => h.close());

const bctx = { logger: testLogger(), signal: new AbortController().signal, queue: CRITICAL_QUEUE, handler: 'test' };
/** notification.created messages the handler emitted for `userId`. */
const createdCount = async (userId: string) => h.createdFor(userId).length;

it('a copy replayed after its inbox row was purged changes nothing', async () => {
  const handle = createNotificationBatchHandler({
    pool: h.pool,
    emit: h.emit,
    consumer: CRITICAL_QUEUE,
    metrics: h.metrics,
    batchTimeoutMs: BATCH_TIMEOUT_MS,
  });
  const event = mention('c-retention', 'bob', 'carol');
  await handle(batchItems([event]), bctx);
  expect((await h.pool.query('SELECT 1 FROM notification_items WHERE user_id = $1', ['carol'])).rowCount).toBe(1);
  expect(await createdCount('carol')).toBe(1);

  // Eight days on, retention deleted the inbox row (what the reconciler's job does past the horizon).
  expect((await h.pool.query('DELETE FROM processed_events WHERE event_id = $1', [event.id])).rowCount).toBe(1);

  // The same event again, as a DLQ replay or a late relay would bring it: it passes the inbox
  // (its row is gone) and meets the slot key: no second row, count or notification.created.
  const [outcome] = (await handle(batchItems([event]), bctx)) ?? [];
  expect(outcome).not.toBeInstanceOf(Error);
  expect((await h.pool.query('SELECT 1 FROM notification_items WHERE user_id = $1', ['carol'])).rowCount).toBe(1);
  expect(await createdCount('carol')).toBe(1);
  expect((await countersAndRecount(h.pool)).find((c) => c.user_id === 'carol')).toEqual({
    user_id: 'carol',
    counter: 1,
    recount: 1,
  });
});
