import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { eventually, type PeekedMessage } from '@community/testing';
import { bearer, event, mention, startHarness, type Harness } from './harness';

/**
 * Bad input ends in the DLQ of the queue it arrived on, with a header saying why, at its first
 * failure (no retry tier in between: the headers say so), and the service goes on processing what
 * comes after it.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness('dlq');
});
afterAll(async () => h.close());

const valid = mention('c-ok', 'actor-1', 'someone');
const violation = { ...valid, id: randomUUID(), data: { ...valid.data, mentionedUserId: undefined } };

/** Polls the DLQ until the message with `messageId` is there. */
async function dead(queue: string, messageId: string, harness: Harness = h): Promise<{ msg: PeekedMessage }> {
  const seen: PeekedMessage[] = [];
  const msg = await eventually(
    `${messageId} in ${queue}`,
    async () => {
      if (!harness.vhost) throw new Error('harness without AMQP');
      seen.push(...(await harness.vhost.take(queue, 50)));
      return seen.find((m) => m.properties.message_id === messageId);
    },
    15_000,
    25,
  );
  return { msg };
}

it.each([
  [
    'malformed JSON',
    'user.mentioned',
    '{"id": "x", "type": ',
    'notification-service.critical.dlq',
    'ContractError',
    /not valid JSON/,
  ],
  [
    'a schema violation',
    'user.mentioned',
    JSON.stringify(violation),
    'notification-service.critical.dlq',
    'ContractError',
    /\/data\/mentionedUserId: Expected required property/,
  ],
  [
    'an unknown event type',
    'user.followed',
    JSON.stringify({ ...valid, id: randomUUID(), type: 'user.teleported' }),
    'notification-service.standard.dlq',
    'ContractError',
    /Unknown event type 'user.teleported'/,
  ],
  [
    'an unknown version',
    'security.alert',
    JSON.stringify({ ...event('security.alert', { alertId: 'a1', userId: 'u1', kind: 'k', detail: '' }), version: 9 }),
    'notification-service.critical.dlq',
    'ContractError',
    /Unsupported version 9/,
  ],
  [
    'a valid event this service does not handle',
    'comment.created',
    JSON.stringify(event('post.published', { postId: 'p', authorId: 'a', title: 't', excerpt: 'e' })),
    'notification-service.standard.dlq',
    'PermanentError',
    /does not handle event type 'post.published'/,
  ],
  [
    'text no store keeps (NUL byte)',
    'user.mentioned',
    JSON.stringify({ ...valid, id: randomUUID(), data: { ...valid.data, mentionedUserId: 'victim\u0000' } }),
    'notification-service.critical.dlq',
    'ContractError',
    /\/data\/mentionedUserId: Expected text without NUL/,
  ],
  [
    'an unpaired surrogate',
    'user.mentioned',
    JSON.stringify({ ...valid, id: randomUUID(), data: { ...valid.data, excerpt: 'tail\ud800' } }),
    'notification-service.critical.dlq',
    'ContractError',
    /\/data\/excerpt: Expected text without NUL/,
  ],
])(
  '%s lands in the right DLQ with a reason at its first failure',
  async (_what, routingKey, body, dlq, errorClass, reason) => {
    const messageId = randomUUID();
    await h.publishRaw(routingKey, body, messageId);
    const { msg } = await dead(dlq, messageId);
    // At once, from the runtime's own record: one attempt, and the first failure is the dead-lettering
    // (a detour through a retry tier would show a later x-dead-lettered-at and more attempts).
    expect(msg.properties.headers).toMatchObject({
      'x-error-class': errorClass,
      'x-error-kind': 'permanent',
      'x-attempts': 1,
      'x-retry-attempt': 1,
    });
    expect(msg.properties.headers?.['x-first-failure-at']).toBe(msg.properties.headers?.['x-dead-lettered-at']);
    expect(String(msg.properties.headers?.['x-error-message'])).toMatch(reason);

    // The service keeps serving: a valid message right after is processed.
    const user = `u-${randomUUID()}`;
    await h.publish(mention(`c-${randomUUID()}`, 'actor-1', user));
    await eventually(
      'the next valid mention is visible',
      async () => {
        const res = await h.app.inject({
          url: `/v1/users/${user}/notifications/unread-count`,
          headers: bearer(h.token(user)),
        });
        return res.json().count === 1;
      },
      15_000,
      20,
    );
  },
);

describe('a batch', () => {
  // Its own service, whose batches wait up to 1 s to fill, so that messages published together
  // are consumed together; and whose log is kept, to see the batch that failed.
  const lines: Array<{ msg: string; size?: number; queue?: string }> = [];
  let b: Harness;
  beforeAll(async () => {
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    b = await startHarness('dlq-batch', { batchWaitMs: 1000, logger });
    // The contract refuses text no store keeps (NUL) before any handler, so a valid event that the
    // database refuses is made here: PostgreSQL rejects the notification of one recipient with a
    // permanent SQLSTATE (22023, invalid parameter value), as it would reject data it cannot hold.
    await b.pool.query(`CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.user_id LIKE 'poison-%' THEN RAISE EXCEPTION 'refused for %', NEW.user_id USING ERRCODE = '22023'; END IF; RETURN NEW; END $$`);
    await b.pool.query(
      'CREATE TRIGGER refuse_poison BEFORE INSERT ON notification_items FOR EACH ROW EXECUTE FUNCTION refuse_poison()',
    );
  });
  afterAll(async () => b?.close());

  it('a bad event in a batch sends only itself to the DLQ, with the reason; the rest of the batch commits', async () => {
    const users = Array.from({ length: 20 }, () => `u-${randomUUID()}`);
    const poison = mention(`c-${randomUUID()}`, 'actor-1', `poison-${randomUUID()}`);
    const good = users.map((u) => mention(`c-${randomUUID()}`, 'actor-1', u));
    const t0 = Date.now();
    await Promise.all([...good.slice(0, 10), poison, ...good.slice(10)].map((e) => b.publish(e)));

    const { msg } = await dead('notification-service.critical.dlq', poison.id, b);
    expect(msg.properties.headers).toMatchObject({
      'x-error-class': 'PermanentError',
      'x-error-kind': 'permanent',
      'x-attempts': 1,
      'x-original-queue': 'notification-service.critical',
      'x-handler': 'notification-service.critical:notifications',
      'x-original-routing-key': 'user.mentioned',
    });
    expect(String(msg.properties.headers?.['x-error-message'])).toMatch(/SQLSTATE 22023.*refused for poison-/);
    // A sanity bound on the timestamp (it is this dead-lettering's, not a copied one), not a latency:
    // it was written after the publish and before the test read it; load cannot break either side.
    const deadLetteredAt = Date.parse(String(msg.properties.headers?.['x-dead-lettered-at']));
    expect(deadLetteredAt).toBeGreaterThanOrEqual(t0 - 1000);
    expect(deadLetteredAt).toBeLessThanOrEqual(Date.now());

    // The poison was not alone: the batch that failed held it and good events (the only event that
    // can fail here is the poison), and was then isolated one event per transaction.
    const failed = lines.filter((l) => l.msg === 'batch failed permanently; isolating the failing events one by one');
    expect(failed).toHaveLength(1);
    expect(failed[0].size).toBeGreaterThan(1);

    await eventually('all good mentions committed', async () => {
      const { rows } = await b.pool.query('SELECT count(*)::int AS n FROM notification_items WHERE user_id = ANY($1)', [
        users,
      ]);
      return rows[0].n === users.length;
    });
    // Nothing else went to the DLQ.
    expect(await b.vhost?.take('notification-service.critical.dlq', 50)).toEqual([]);
  });
});
