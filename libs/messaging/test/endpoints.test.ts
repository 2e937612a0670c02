import { Registry } from 'prom-client';
import { createMessaging, type Messaging } from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, recordingLogger, testTopology, validateTestEvent } from './support/events';
import { tcpProxy, type TcpProxy } from './support/tcp-proxy';

/**
 * AMQP_URL naming two "nodes" (docs/MESSAGING.md "Endpoints"): two TCP ports of this test, each
 * forwarding to the broker. The runtime connects through one of them; when that one goes away
 * (live connections dropped, new ones refused: a node lost without a load balancer in front),
 * it reconnects through the other and keeps consuming, with nothing restarted.
 */
const QUEUE = 'test.endpoints';
const topology = testTopology([{ name: QUEUE }]);
let vhost: TestVhost;
let nodes: TcpProxy[];
let messaging: Messaging;
const handled: string[] = [];
const { logger, lines } = recordingLogger();

beforeAll(async () => {
  vhost = await createTestVhost('endpoints');
  const broker = new URL(vhost.url);
  nodes = await Promise.all([0, 1].map(() => tcpProxy({ host: broker.hostname, port: Number(broker.port || 5672) })));
  await Promise.all(nodes.map((n) => n.open()));
  const via = (n: TcpProxy) => Object.assign(new URL(vhost.url), { port: String(n.port) }).toString();
  messaging = createMessaging({
    url: nodes.map(via).join(','),
    managementUrl: vhost.management.baseUrl.replace(
      '//',
      `//${vhost.management.username}:${vhost.management.password}@`,
    ),
    service: 'endpoints-test',
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
  await Promise.all(nodes.map((n) => n.close()));
  await vhost.delete();
});

/** The port of the node the runtime said it connected to last. */
function connectedPort(): number {
  const connected = lines.filter((l) => l.msg === 'amqp connected');
  return Number(new URL(String(connected[connected.length - 1]?.broker)).port);
}

it('fails over to the other node of the list when the one it is connected to goes away', async () => {
  const first = mention('through the first node');
  await messaging.publisher.publish(first, { routingKey: QUEUE });
  await eventually('consumed', () => handled.includes(first.id));
  const usedPort = connectedPort();
  const used = nodes.find((n) => n.port === usedPort);
  const other = nodes.find((n) => n.port !== usedPort);
  expect(used).toBeDefined();

  await used!.close();
  await eventually(
    'reconnected through the other node',
    () => lines.filter((l) => l.msg === 'amqp connected').length >= 2 && connectedPort() === other!.port,
    60_000,
  );
  await eventually('consumers ready again', () => messaging.readiness().consumers, 60_000);
  const second = mention('through the second node');
  await eventually(
    'published through the other node',
    () =>
      messaging.publisher.publish(second, { routingKey: QUEUE }).then(
        () => true,
        () => false,
      ),
    60_000,
  );
  await eventually('consumed after the failover', () => handled.includes(second.id), 60_000);
  // At least once: an ack still on the wire of the dropped connection is lost with it, and that
  // message comes again (the apps' handlers are idempotent; here both are simply there).
  expect([...new Set(handled)].sort()).toEqual([first.id, second.id].sort());
}, 120_000);
