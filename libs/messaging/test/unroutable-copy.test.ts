import amqplib from 'amqplib';
import { Registry } from 'prom-client';
import { createMessaging, managementRequest, TransientError, type Messaging } from '../src';
import { declareTopology } from '../src/topology';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent } from './support/events';

/** A retry copy that no queue receives must never let its original be acked. */
const topology = testTopology([{ name: 'test.unroutable', retryDelaysMs: [300] }]);
let vhost: TestVhost;
let messaging: Messaging;

beforeAll(async () => {
  vhost = await createTestVhost('unroutable');
  messaging = createMessaging({
    url: vhost.url,
    service: 'unroutable-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
});

afterAll(async () => {
  await messaging.stop(1000);
  await vhost.delete();
});

it('keeps the original unacked while its retry queue is missing, counts it, and proceeds once the queue is back', async () => {
  const attempts: number[] = [];
  messaging.consume({
    queue: 'test.unroutable',
    name: 'fails-once',
    validate: validateTestEvent,
    handle: async (_e, ctx) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) throw new TransientError('busy once');
      return 'processed';
    },
  });
  await messaging.start();
  const retryQueue = 'test.unroutable.retry.300ms';
  const deleted = await managementRequest(
    vhost.management,
    'DELETE',
    `/queues/${encodeURIComponent(vhost.vhost)}/${encodeURIComponent(retryQueue)}`,
  );
  expect(deleted.status).toBe(204);

  await messaging.publisher.publish(mention('retry copy has nowhere to go'), { routingKey: 'test.unroutable' });
  const unroutable = async () =>
    (await messaging.metrics.unroutableCopies.get()).values.find((v) => v.labels.queue === 'test.unroutable')?.value ??
    0;
  await eventually('the unroutable copy counted', async () => (await unroutable()) >= 1, 20_000);
  // The original is neither acked nor lost: it sits unacked on the consumer's channel (the quorum
  // queue's counters refresh every few seconds, hence the wait).
  await eventually(
    'original held unacked',
    async () => {
      const d = await vhost.depth('test.unroutable');
      return d.ready === 0 && d.unacked === 1;
    },
    20_000,
  );
  // It tries the copy again (after its backoff) and is refused again; the original stays where it
  // was all along: not handled a second time, not dead-lettered, still unacked.
  await eventually('the copy tried again and refused again', async () => (await unroutable()) >= 2, 20_000);
  expect(attempts).toEqual([1]);
  expect(await vhost.depth('test.unroutable.dlq')).toMatchObject({ total: 0 });
  expect(await vhost.depth('test.unroutable')).toMatchObject({ ready: 0, unacked: 1 });

  // An operator (or any service's next start) declares the topology again.
  const conn = await amqplib.connect(vhost.url);
  await declareTopology(await conn.createChannel(), messaging.plan);
  await conn.close();
  await eventually('the retry handled', () => attempts.includes(2), 40_000);
  expect(attempts).toEqual([1, 2]);
  await eventually('queue drained and acked', async () => (await vhost.depth('test.unroutable')).total === 0);
  expect(await vhost.depth('test.unroutable.dlq')).toMatchObject({ total: 0 });
}, 90_000);
