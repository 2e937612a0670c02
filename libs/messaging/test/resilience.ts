import { Registry } from 'prom-client';
import { createMessaging, type Messaging } from '../src';
import { eventually, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent } from './support/events';

/**
 * Shared by the connection-loss and broker-restart tests: publish a stream of events (retrying a
 * publish that fails, as the outbox relay does), inject `fault` halfway, and report what the
 * consumer handled.
 */
export async function publishThroughFault(vhost: TestVhost, fault: () => Promise<void>, count = 300) {
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  const messaging: Messaging = createMessaging({
    url: vhost.url,
    service: 'resilience-test',
    topology: testTopology([{ name: 'test.resilience', deliveryLimit: 50 }]),
    logger: testLogger(),
    registry: new Registry(),
    publishTimeoutMs: 5000,
    classifiers: [],
  });
  const handled = new Map<string, number>();
  messaging.consume({
    queue: 'test.resilience',
    name: 'records',
    prefetch: 20,
    validate: validateTestEvent,
    handle: async (event) => {
      await new Promise((r) => setTimeout(r, 2));
      handled.set(event.id, (handled.get(event.id) ?? 0) + 1);
    },
  });
  await messaging.start();

  const events = Array.from({ length: count }, (_, i) => mention(`event ${i}`));
  let publishRetries = 0;
  for (const [i, event] of events.entries()) {
    if (i === Math.floor(count / 2)) await fault();
    for (;;) {
      try {
        await messaging.publisher.publish(event, { routingKey: 'test.resilience' });
        break;
      } catch {
        publishRetries += 1;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  await eventually('every event handled', () => events.every((e) => handled.has(e.id)), 60_000);
  const ready = messaging.readiness();
  await messaging.stop(2000);
  process.off('unhandledRejection', onUnhandled);
  return { events, handled, unhandled, publishRetries, ready };
}
