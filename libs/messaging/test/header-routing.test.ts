import { Registry } from 'prom-client';
import { createMessaging, type Messaging, type Topology } from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testLogger } from './support/events';

/**
 * Exchange-to-exchange and headers bindings on a real broker: the topic exchange passes one routing
 * key to a headers exchange, which passes on only the messages whose header matches. A message of
 * another routing key with the same header never reaches the headers exchange; a message without
 * the header reaches only the routing-key queue.
 */
const topology: Topology = {
  exchanges: [
    { name: 'test.events', type: 'topic' },
    { name: 'test.by-kind', type: 'headers', bindings: [{ exchange: 'test.events', routingKeys: ['thing.created'] }] },
  ],
  queues: [
    { name: 'test.all', bindings: [{ exchange: 'test.events', routingKeys: ['thing.created'] }], retryDelaysMs: [] },
    {
      name: 'test.urgent',
      bindings: [{ exchange: 'test.by-kind', headers: { kind: 'urgent' }, match: 'all' }],
      retryDelaysMs: [],
    },
    { name: 'test.other', bindings: [{ exchange: 'test.events', routingKeys: ['other.thing'] }], retryDelaysMs: [] },
  ],
};
let vhost: TestVhost;
let messaging: Messaging;

beforeAll(async () => {
  vhost = await createTestVhost('header-routing');
  messaging = createMessaging({
    url: vhost.url,
    service: 'header-routing-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    defaultExchange: 'test.events',
  });
  await messaging.start();
});

afterAll(async () => {
  await messaging.stop(1000);
  await vhost.delete();
});

it('routes through the exchange-to-exchange binding and the header match only', async () => {
  const kinds = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? 'urgent' : i % 3 === 1 ? 'routine' : undefined));
  await Promise.all(
    kinds.map((kind) =>
      messaging.publisher.publish(
        { ...mention(), type: 'thing.created' },
        { routingKey: 'thing.created', ...(kind ? { headers: { kind } } : {}) },
      ),
    ),
  );
  // Same header, another routing key: the headers exchange never sees it.
  await Promise.all(
    Array.from({ length: 5 }, () =>
      messaging.publisher.publish(
        { ...mention(), type: 'other.thing' },
        { routingKey: 'other.thing', headers: { kind: 'urgent' } },
      ),
    ),
  );

  await eventually(
    'all delivered',
    async () => (await vhost.ready('test.all')) === 60 && (await vhost.ready('test.other')) === 5,
  );
  expect(await vhost.ready('test.urgent')).toBe(20);
  const urgent = await vhost.take('test.urgent', 100);
  expect(urgent.every((m) => m.properties.headers?.kind === 'urgent' && m.routingKey === 'thing.created')).toBe(true);
});

it('publishes to the entry exchange by default: an exchange fed by another is not a publish target', async () => {
  const plain = createMessaging({
    url: vhost.url,
    service: 'header-routing-default',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
  try {
    await plain.start();
    await plain.publisher.publish({ ...mention(), type: 'other.thing' }, { routingKey: 'other.thing' });
    await eventually('delivered through test.events', async () => (await vhost.ready('test.other')) === 6);
  } finally {
    await plain.stop(1000);
  }
});
