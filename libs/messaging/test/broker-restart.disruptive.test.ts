import { createTestVhost, eventually, rabbitmqctl, type TestVhost } from './support/broker';
import { publishThroughFault } from './resilience';

/** Restarts the whole broker application: runs alone, after the parallel suite (see scripts/dev/test.mjs). */
let vhost: TestVhost;
beforeAll(async () => (vhost = await createTestVhost('restart')));
afterAll(async () => vhost.delete());

it('resumes after `rabbitmqctl stop_app && start_app` with nothing lost and no crash', async () => {
  const { events, handled, unhandled, ready } = await publishThroughFault(vhost, async () => {
    await rabbitmqctl('stop_app');
    await new Promise((r) => setTimeout(r, 1000));
    await rabbitmqctl('start_app');
  });
  expect(unhandled).toEqual([]);
  expect(ready).toEqual({ amqp: true, consumers: true });
  expect(events.filter((e) => !handled.has(e.id))).toEqual([]);
  await eventually('queue drained and acked', async () => (await vhost.depth('test.resilience')).total === 0);
}, 120_000);
