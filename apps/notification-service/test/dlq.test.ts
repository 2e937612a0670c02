import { randomUUID } from 'node:crypto';
import { PermanentError } from '@community/messaging';
import { eventually, testLogger, type PeekedMessage } from '@community/testing';
import { createNotificationBatchHandler } from '../src/handlers/notification-batch';
import { batchItems, bearer, event, mention, startHarness, type Harness } from './harness';

/**
 * Bad input ends in the DLQ of the queue it arrived on, with a header saying why, within a second,
 * and the service goes on processing what comes after it.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('dlq');
});
afterAll(async () => h.close());

const valid = mention('c-ok', 'actor-1', 'someone');
const violation = { ...valid, id: randomUUID(), data: { ...valid.data, mentionedUserId: undefined } };

/** Polls the DLQ until the message with `messageId` is there; returns it and how long it took. */
async function dead(queue: string, messageId: string, since: number): Promise<{ msg: PeekedMessage; ms: number }> {
  const seen: PeekedMessage[] = [];
  const msg = await eventually(
    `${messageId} in ${queue}`,
    async () => {
      if (!h.vhost) throw new Error('harness without AMQP');
      seen.push(...(await h.vhost.take(queue, 50)));
      return seen.find((m) => m.properties.message_id === messageId);
    },
    5000,
    25,
  );
  return { msg, ms: Date.now() - since };
}

it.each([
  ['malformed JSON', 'user.mentioned', '{"id": "x", "type": ', 'notification-service.critical.dlq', 'ContractError', /not valid JSON/],
  ['a schema violation', 'user.mentioned', JSON.stringify(violation), 'notification-service.critical.dlq', 'ContractError', /\/data\/mentionedUserId: Expected required property/],
  ['an unknown event type', 'user.followed', JSON.stringify({ ...valid, id: randomUUID(), type: 'user.teleported' }), 'notification-service.standard.dlq', 'ContractError', /Unknown event type 'user.teleported'/],
  ['an unknown version', 'security.alert', JSON.stringify({ ...event('security.alert', { alertId: 'a1', userId: 'u1', kind: 'k', detail: '' }), version: 9 }), 'notification-service.critical.dlq', 'ContractError', /Unsupported version 9/],
  ['a valid event this service does not handle', 'comment.created', JSON.stringify(event('post.published', { postId: 'p', authorId: 'a', title: 't', excerpt: 'e' })), 'notification-service.standard.dlq', 'PermanentError', /does not handle event type 'post.published'/],
  ['text no store keeps (NUL byte)', 'user.mentioned', JSON.stringify({ ...valid, id: randomUUID(), data: { ...valid.data, mentionedUserId: 'victim\u0000' } }), 'notification-service.critical.dlq', 'ContractError', /\/data\/mentionedUserId: Expected text without NUL/],
  ['an unpaired surrogate', 'user.mentioned', JSON.stringify({ ...valid, id: randomUUID(), data: { ...valid.data, excerpt: 'tail\ud800' } }), 'notification-service.critical.dlq', 'ContractError', /\/data\/excerpt: Expected text without NUL/],
])('%s lands in the right DLQ with a reason within a second', async (_what, routingKey, body, dlq, errorClass, reason) => {
  const messageId = randomUUID();
  const t0 = Date.now();
  await h.publishRaw(routingKey, body, messageId);
  const { msg, ms } = await dead(dlq, messageId, t0);
  expect(ms).toBeLessThan(1000);
  expect(msg.properties.headers).toMatchObject({ 'x-error-class': errorClass, 'x-error-kind': 'permanent' });
  expect(String(msg.properties.headers?.['x-error-message'])).toMatch(reason);

  // The service keeps serving: a valid message right after is processed.
  const user = `u-${randomUUID()}`;
  await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user));
  await eventually('the next valid mention is visible', async () => {
    const res = await h.app.inject({ url: `/v1/users/${user}/notifications/unread-count`, headers: bearer(h.token(user)) });
    return res.json().count === 1;
  }, 5000, 20);
});

it('an event the database refuses fails alone; the rest of its batch commits', async () => {
  // The contract now refuses NUL before any handler, so such an event can only reach the batch
  // handler directly. It stands for any permanent refusal by PostgreSQL (SQLSTATE class 22/23).
  const handle = createNotificationBatchHandler({ pool: h.pool, consumer: 'dlq-direct', metrics: h.metrics });
  const users = Array.from({ length: 20 }, () => `u-${randomUUID()}`);
  const good = users.map((u) => mention(`c-${randomUUID()}`, 'actor-1', u));
  const poison = { ...good[0], id: randomUUID(), data: { ...good[0].data, commentId: `c-${randomUUID()}`, mentionedUserId: 'bad\u0000user' } };
  const batch = [...good.slice(0, 10), poison, ...good.slice(10)];
  const results = (await handle(batchItems(batch), { logger: testLogger(), signal: new AbortController().signal, queue: 'test', handler: 'test' })) as unknown[];

  expect(results[10]).toBeInstanceOf(PermanentError);
  expect(String((results[10] as Error).message)).toMatch(/SQLSTATE 22021/);
  expect(results.filter((r) => r === 'processed')).toHaveLength(users.length);
  const { rows } = await h.pool.query('SELECT count(*)::int AS n FROM notification_items WHERE user_id = ANY($1)', [users]);
  expect(rows[0].n).toBe(users.length);
});
