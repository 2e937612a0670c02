import amqplib from 'amqplib';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createMessaging, managementRequest, type Messaging } from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testTopology, validateTestEvent } from './support/events';

/**
 * A broker-initiated cancel (basic.cancel: the queue was deleted, moved, or its node is going down)
 * leaves the channel and the connection open, so no reconnect follows it. The consumer says it is
 * not ready from that moment, declares its queue again and resubscribes by itself: a message
 * published after the queue was deleted under it is consumed, with no restart of anything.
 */
const QUEUE = 'test.cancelled';
const topology = testTopology([{ name: QUEUE }]);
let vhost: TestVhost;
let messaging: Messaging;
const handled: string[] = [];
// Lines as they are written, each with the runtime's readiness at that very moment: pino writes to
// this destination synchronously, inside the call that logs.
const lines: Array<{ msg: string; consumersReady: boolean }> = [];

async function queueState(): Promise<{ messageCount: number; consumerCount: number } | undefined> {
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createChannel();
    ch.on('error', () => undefined); // a 404 for a missing queue closes this channel only
    const { messageCount, consumerCount } = await ch.checkQueue(QUEUE);
    return { messageCount, consumerCount };
  } catch {
    return undefined; // no such queue
  } finally {
    await conn.close().catch(() => undefined);
  }
}

beforeAll(async () => {
  vhost = await createTestVhost('cancel');
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) =>
        void lines.push({
          msg: String((JSON.parse(line) as { msg: unknown }).msg),
          consumersReady: messaging?.readiness().consumers ?? false,
        }),
    },
  );
  messaging = createMessaging({
    url: vhost.url,
    service: 'cancel-test',
    topology,
    logger,
    registry: new Registry(),
    classifiers: [],
  });
  messaging.consume({
    queue: QUEUE,
    name: 'records',
    validate: validateTestEvent,
    handle: async (e) => void handled.push(e.id),
  });
  await messaging.start();
});

afterAll(async () => {
  await messaging.stop(1000);
  await vhost.delete();
});

it('resubscribes after its queue is deleted under it, and is not ready until it has', async () => {
  const before = mention('before the delete');
  await messaging.publisher.publish(before, { routingKey: QUEUE });
  await eventually('the first message consumed', () => handled.includes(before.id));
  expect(messaging.readiness().consumers).toBe(true);

  // An operator deletes the queue in the management UI (or a node hosting it goes away).
  const res = await managementRequest(
    vhost.management,
    'DELETE',
    `/queues/${encodeURIComponent(vhost.vhost)}/${QUEUE}`,
  );
  expect(res.status).toBe(204);

  await eventually(
    'the consumer resubscribed',
    () => lines.some((l) => l.msg === 'resubscribed after the broker cancelled the consumer'),
    60_000,
  );
  const cancelled = lines.find((l) => l.msg.startsWith('consumer cancelled by the broker'));
  // At the moment the cancel arrived, readiness already said so.
  expect(cancelled).toEqual({
    msg: 'consumer cancelled by the broker; not ready until resubscribed',
    consumersReady: false,
  });
  expect(messaging.readiness().consumers).toBe(true);
  // The queue is back, with this consumer on it, and takes new messages.
  expect(await queueState()).toEqual({ messageCount: 0, consumerCount: 1 });
  const after = mention('after the delete');
  await messaging.publisher.publish(after, { routingKey: QUEUE });
  await eventually('a message published after the delete consumed', () => handled.includes(after.id));
  expect(handled).toEqual([before.id, after.id]);
}, 90_000);
