import { Registry } from 'prom-client';
import { createMessaging, type Messaging } from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology } from './support/events';

/**
 * One full queue must not stop delivery to the others: a publish routed to a full queue and a
 * roomy one is confirmed, the roomy one gets everything, and the full one's overflow sits in its
 * DLQ with reason maxlen, visible in the metrics.
 */
const topology = testTopology([
  { name: 'test.full', routingKeys: ['test.fanout'], maxLength: 5 },
  { name: 'test.roomy', routingKeys: ['test.fanout'] },
]);
let vhost: TestVhost;
let messaging: Messaging;

beforeAll(async () => {
  vhost = await createTestVhost('overflow');
  messaging = createMessaging({
    url: vhost.url,
    service: 'overflow-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    policyCheckIntervalMs: 300,
  });
  await messaging.start();
});

afterAll(async () => {
  await messaging.stop(1000);
  await vhost.delete();
});

it('confirms every publish while one bound queue is full, and dead-letters that queue’s oldest messages with reason maxlen', async () => {
  const events = Array.from({ length: 12 }, (_, i) => mention(`fan-out ${i}`));
  // One at a time, so "oldest" is well defined. Every publish is confirmed: none is refused because test.full is full.
  for (const e of events) await messaging.publisher.publish(e, { routingKey: 'test.fanout' });

  expect(await vhost.ready('test.roomy')).toBe(12);
  expect(await vhost.ready('test.full')).toBe(5);
  // Counted first, then taken: a take removes what it reads, so taking while the dead-lettering
  // (asynchronous for a quorum queue) was half done would lose the first ones from every later look.
  await eventually('7 overflowed into test.full.dlq', async () => (await vhost.ready('test.full.dlq')) >= 7, 60_000);
  const dead = await vhost.take('test.full.dlq', 20);
  expect(dead.map((d) => d.properties.message_id)).toEqual(events.slice(0, 7).map((e) => e.id));
  for (const d of dead) {
    expect(d.properties.headers).toMatchObject({
      'x-first-death-reason': 'maxlen',
      'x-first-death-queue': 'test.full',
    });
    expect((d.properties.headers?.['x-death'] as Array<{ reason: string }>)[0].reason).toBe('maxlen');
  }
  expect((await vhost.take('test.full', 20)).map((m) => m.properties.message_id)).toEqual(
    events.slice(7).map((e) => e.id),
  );
}, 60_000);

it('reports a queue at its max-length and its DLQ depth in the metrics', async () => {
  for (const e of Array.from({ length: 8 }, (_, i) => mention(`refill ${i}`)))
    await messaging.publisher.publish(e, { routingKey: 'test.fanout' });
  const gauge = async (name: 'queueMessages' | 'queueMaxLength', queue: string) =>
    (await messaging.metrics[name].get()).values.find((v) => v.labels.queue === queue)?.value;
  // The broker's statistics refresh every ~5 s, each queue on its own clock.
  const depths = async () => [
    await gauge('queueMessages', 'test.full'),
    await gauge('queueMessages', 'test.full.dlq'),
    await gauge('queueMessages', 'test.roomy'),
  ];
  // The max-length comes from the same listing, whose per-queue fields can be missing for a few
  // seconds (a loaded broker lists a queue before its details): both are awaited together.
  const sampled = async () => [...(await depths()), await gauge('queueMaxLength', 'test.full')];
  await eventually(
    'depths and max-length sampled',
    async () => JSON.stringify(await sampled()) === JSON.stringify([5, 3, 20, 5]),
    90_000,
  );
  expect(await gauge('queueMaxLength', 'test.full')).toBe(5);
}, 120_000);
