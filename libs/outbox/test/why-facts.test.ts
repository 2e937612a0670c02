import type { Pool } from 'pg';
import { buildEvent } from '@community/contracts';
import { createPgPool, withTransaction } from '@community/db';
import { createTestDatabase, type TestDatabase } from '@community/testing';
import { enqueueEvents, outboxEventsAbout, outboxEventsWith } from '../src';
import { mention } from './helpers';

/**
 * The outbox's reads for a diagnosis (the reconciler's "why"): which events a producer wrote about a
 * resource or under an id, and whether each was published. The field of `data` is the caller's.
 */
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase('outbox_why_facts');
  pool = createPgPool(db.url, { max: 2 });
});

afterAll(async () => {
  await pool.end();
  await db.drop();
});

const created = (userId: string, key: string) =>
  buildEvent(
    'notification.created',
    {
      notificationId: `n-${key}`,
      userId,
      type: 'mention',
      idempotencyKey: key,
      actorId: 'u-actor',
      resourceType: 'comment',
      resourceId: 'c-1',
      emailChannel: 'off',
    },
    { producer: 'notifier' },
  );

it('outboxEventsAbout finds events by id or by a data field, in write order, without the excepted type', async () => {
  const [first, second, other] = [mention('ada', 1), mention('bob', 1), mention('ada', 2)]; // commentIds c-1, c-1, c-2
  const notice = created('ada', 'k-1');
  await withTransaction(pool, (tx) =>
    enqueueEvents(tx, 'api', [
      { event: first, aggregateId: 'c-1' },
      { event: second, aggregateId: 'c-1' },
      { event: other, aggregateId: 'c-2' },
    ]),
  );
  await withTransaction(pool, (tx) => enqueueEvents(tx, 'notifier', [{ event: notice, aggregateId: 'ada' }]));

  const about = await outboxEventsAbout(pool, {
    data: { field: 'commentId', value: 'c-1' },
    exceptType: 'notification.created',
    limit: 20,
  });
  expect(about.map((e) => e.eventId)).toEqual([first.id, second.id]);
  expect(about[0]).toEqual({
    eventId: first.id,
    producer: 'api',
    payload: JSON.parse(JSON.stringify(first)),
    createdAt: expect.any(Date),
    sentAt: null,
  });
  // Asked for by its own id, an event of the excepted type is still left out.
  expect(
    (await outboxEventsAbout(pool, { eventId: notice.id, exceptType: 'notification.created', limit: 20 })).length,
  ).toBe(0);
  expect((await outboxEventsAbout(pool, { eventId: other.id, limit: 20 })).map((e) => e.eventId)).toEqual([other.id]);
  expect(
    (await outboxEventsAbout(pool, { data: { field: 'commentId', value: 'c-1' }, limit: 1 })).map((e) => e.eventId),
  ).toEqual([first.id]);
  // Neither an id nor a value: nothing, not everything.
  expect(await outboxEventsAbout(pool, { limit: 20 })).toEqual([]);
});

it("outboxEventsWith finds one producer's events of a type by a data field, each with its value and publication", async () => {
  const [k1, k2, dees] = [created('cy', 'cy-1'), created('cy', 'cy-2'), created('dee', 'cy-1')];
  await withTransaction(pool, (tx) =>
    enqueueEvents(tx, 'notifier', [
      { event: k1, aggregateId: 'cy' },
      { event: k2, aggregateId: 'cy' },
      { event: dees, aggregateId: 'dee' },
    ]),
  );
  const sentAt = new Date('2026-01-02T03:04:05.678Z');
  await pool.query('UPDATE outbox_messages SET sent_at = $2 WHERE event_id = $1', [k1.id, sentAt]);

  const q = { producer: 'notifier', aggregateId: 'cy', eventType: 'notification.created', field: 'idempotencyKey' };
  const found = await outboxEventsWith(pool, { ...q, values: ['cy-1', 'cy-2', 'cy-3'] });
  expect(found.sort((a, b) => a.value.localeCompare(b.value))).toEqual([
    { eventId: k1.id, value: 'cy-1', sentAt },
    { eventId: k2.id, value: 'cy-2', sentAt: null },
  ]);
  expect(await outboxEventsWith(pool, { ...q, producer: 'someone-else', values: ['cy-1'] })).toEqual([]);
  expect(await outboxEventsWith(pool, { ...q, values: [] })).toEqual([]);
});
