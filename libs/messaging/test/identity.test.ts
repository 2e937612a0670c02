import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { Registry } from 'prom-client';
import { createMessaging, managementRequest, MessageTooLargeError, type Messaging, type Topology } from '../src';
import { createTestVhost, eventually, type PeekedMessage, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent, type TestEvent } from './support/events';

/**
 * Broker identity on the shared broker (docs/MESSAGING.md "Broker identity"). The consumers run
 * as guest; `user.mentioned` may be published only by the service `community-api`, which this
 * deployment maps to a broker user created in the test vhost. A second user, with the same write
 * permission on the exchange, is the forger: the broker lets it publish, the consumer refuses it.
 */
const base = testTopology([
  { name: 'id.strict', routingKeys: ['user.mentioned'], retryDelaysMs: [100] },
  { name: 'id.lenient', routingKeys: ['user.mentioned'], retryDelaysMs: [100] },
]);
const topology: Topology = { ...base, producers: { 'user.mentioned': ['community-api'] } };
const MAX = 2_000;

let vhost: TestVhost;
const users: string[] = [];
const runtimes: Messaging[] = [];
const connections: amqplib.ChannelModel[] = [];
let producer: { name: string; url: string };
let forger: { name: string; url: string };
let handled: Record<'id.strict' | 'id.lenient', TestEvent[]>;
let failOnce: Set<string>;

async function user(): Promise<{ name: string; url: string }> {
  const name = `id-${randomBytes(4).toString('hex')}`;
  users.push(name);
  const v = encodeURIComponent(vhost.vhost);
  expect(
    (await managementRequest(vhost.management, 'PUT', `/users/${name}`, { password: 'pw', tags: 'management' })).ok,
  ).toBe(true);
  // Publishes to the events exchange, nothing else: what a producer's least-privilege user may do.
  expect(
    (
      await managementRequest(vhost.management, 'PUT', `/permissions/${v}/${name}`, {
        configure: '^$',
        write: '^test\\.events$',
        read: '^$',
      })
    ).ok,
  ).toBe(true);
  const b = new URL(vhost.url);
  return { name, url: `${b.protocol}//${name}:pw@${b.host}/${v}` };
}

/** A raw publish as `who`, confirmed; `userId` as given (the broker checks it against `who`). */
async function publishRaw(who: { url: string }, body: Buffer, props: amqplib.Options.Publish): Promise<void> {
  const conn = await amqplib.connect(who.url);
  connections.push(conn);
  const ch = await conn.createConfirmChannel();
  await new Promise<void>((resolve, reject) =>
    ch.publish(
      'test.events',
      'user.mentioned',
      body,
      { persistent: true, contentType: 'application/json', type: 'user.mentioned', ...props },
      (err) => (err ? reject(err) : resolve()),
    ),
  );
}

const headersOf = (m: PeekedMessage) => m.properties.headers ?? {};

beforeAll(async () => {
  vhost = await createTestVhost('identity');
  [producer, forger] = [await user(), await user()];
  handled = { 'id.strict': [], 'id.lenient': [] };
  failOnce = new Set();
  const consumerOf = (queue: 'id.strict' | 'id.lenient', missingUserId: 'refuse' | 'accept') => {
    const messaging = createMessaging({
      url: vhost.url,
      service: `identity-${queue}`,
      topology,
      logger: testLogger(),
      registry: new Registry(),
      classifiers: [],
      maxMessageBytes: MAX,
      producerCheck: { brokerUsers: { 'community-api': producer.name }, missingUserId },
    });
    runtimes.push(messaging);
    messaging.consume<TestEvent>({
      queue,
      name: 'records',
      validate: validateTestEvent,
      handle: async (e) => {
        // A transient failure on the first try: the retry copy comes back with the consumer's own user-id.
        if (e.data.excerpt === 'fail once' && !failOnce.has(`${queue}:${e.id}`)) {
          failOnce.add(`${queue}:${e.id}`);
          throw new Error('transient, once');
        }
        handled[queue].push(e);
      },
    });
    return messaging.start();
  };
  await Promise.all([consumerOf('id.strict', 'refuse'), consumerOf('id.lenient', 'accept')]);
}, 60_000);

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  await Promise.all(runtimes.map((m) => m.stop(1000)));
  await managementRequest(vhost.management, 'POST', '/users/bulk-delete', { users });
  await vhost.delete();
});

async function producerRuntime(options: { maxMessageBytes?: number } = {}): Promise<Messaging> {
  const messaging = createMessaging({
    url: producer.url,
    service: 'community-api',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    provisioning: 'own-queues',
    ...options,
  });
  runtimes.push(messaging);
  await messaging.start();
  return messaging;
}

it('the publisher sets user-id to its connection’s user; the allowed producer’s event is handled, a failed try retried through the own exchange', async () => {
  const messaging = await producerRuntime();
  const event = mention('allowed');
  const retried = mention('fail once');
  await messaging.publisher.publish(event);
  await messaging.publisher.publish(retried);
  await eventually(
    'both handled on the strict queue',
    () =>
      ['id.strict' as const].every((q) => [event.id, retried.id].every((id) => handled[q].some((e) => e.id === id))),
    20_000,
  );
  expect(failOnce.has(`id.strict:${retried.id}`)).toBe(true);
  expect(await vhost.ready('id.strict.dlq')).toBe(0);
});

it('a type published by a user that may not publish it is dead-lettered at once with the reason, never retried or handled', async () => {
  const event = mention('forged');
  await publishRaw(forger, Buffer.from(JSON.stringify(event)), { messageId: event.id, userId: forger.name });
  const [dead] = await eventually(
    'the forged event in the DLQ',
    async () => {
      const got = await vhost.take('id.strict.dlq');
      return got.length > 0 ? got : undefined;
    },
    20_000,
  );
  expect(headersOf(dead)).toMatchObject({
    'x-error-class': 'ForbiddenPublisherError',
    'x-error-kind': 'permanent',
    'x-attempts': 1,
    'x-original-queue': 'id.strict',
  });
  expect(String(headersOf(dead)['x-error-message'])).toContain(
    `user.mentioned published by broker user '${forger.name}', which may not publish it (may: ${producer.name})`,
  );
  expect(handled['id.strict'].some((e) => e.id === event.id)).toBe(false);
  // The lenient queue accepts a missing user-id only: a forged one is refused there too.
  await eventually(
    'refused on the lenient queue too',
    async () => (await vhost.take('id.lenient.dlq')).some((m) => m.properties.message_id === event.id),
    20_000,
  );
  expect(handled['id.lenient'].some((e) => e.id === event.id)).toBe(false);
});

it('without user-id: refused by default, accepted where the transition setting says so', async () => {
  const event = mention('no user-id');
  await publishRaw(producer, Buffer.from(JSON.stringify(event)), { messageId: event.id });
  await eventually('handled on the lenient queue', () => handled['id.lenient'].some((e) => e.id === event.id), 20_000);
  const [dead] = await eventually(
    'dead-lettered on the strict queue',
    async () => {
      const got = await vhost.take('id.strict.dlq');
      return got.length > 0 ? got : undefined;
    },
    20_000,
  );
  expect(dead.properties.message_id).toBe(event.id);
  expect(headersOf(dead)).toMatchObject({ 'x-error-class': 'ForbiddenPublisherError', 'x-error-kind': 'permanent' });
  expect(String(headersOf(dead)['x-error-message'])).toContain('has no user-id');
});

it('a message over the consumer’s limit is dead-lettered unparsed with the reason; the publisher refuses one over its own', async () => {
  const big = mention('x'.repeat(MAX));
  await publishRaw(producer, Buffer.from(JSON.stringify(big)), { messageId: big.id, userId: producer.name });
  const [dead] = await eventually(
    'the large message in the DLQ',
    async () => {
      const got = await vhost.take('id.strict.dlq');
      return got.length > 0 ? got : undefined;
    },
    20_000,
  );
  expect(dead.properties.message_id).toBe(big.id);
  expect(headersOf(dead)).toMatchObject({
    'x-error-class': 'MessageTooLargeError',
    'x-error-kind': 'permanent',
    'x-attempts': 1,
  });
  expect(String(headersOf(dead)['x-error-message'])).toMatch(
    /message body of \d+ bytes is larger than the limit of 2000 bytes/,
  );
  expect(handled['id.strict'].some((e) => e.id === big.id)).toBe(false);

  const small = await producerRuntime({ maxMessageBytes: 500 });
  await expect(small.publisher.publish(mention('y'.repeat(600)))).rejects.toBeInstanceOf(MessageTooLargeError);
});
