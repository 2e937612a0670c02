import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { publishThroughFault } from './resilience';

let vhost: TestVhost;
beforeAll(async () => (vhost = await createTestVhost('reconnect')));
afterAll(async () => vhost.delete());

it('resumes consuming and publishing after the broker closes every connection, losing nothing', async () => {
  const { events, handled, unhandled, ready } = await publishThroughFault(vhost, async () => {
    await vhost.closeConnections();
    await new Promise((r) => setTimeout(r, 300));
    await vhost.closeConnections(); // twice, while the first reconnect may be under way
  });
  expect(unhandled).toEqual([]);
  expect(ready).toEqual({ amqp: true, consumers: true });
  // At-least-once: every event arrived; a redelivery after the cut is allowed (handlers are idempotent).
  expect(events.filter((e) => !handled.has(e.id))).toEqual([]);
  // …and every delivery was acked (settlements apply through the quorum queue's log a moment later).
  await eventually('queue drained and acked', async () => (await vhost.depth('test.resilience')).total === 0);
}, 90_000);
