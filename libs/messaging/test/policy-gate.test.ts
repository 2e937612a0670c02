import amqplib from 'amqplib';
import { Registry } from 'prom-client';
import { createMessaging, managementRequest, type Messaging } from '../src';
import { declareTopology, plan } from '../src/topology';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, recordingLogger, testLogger, testTopology, validateTestEvent } from './support/events';
import { tcpProxy, type TcpProxy } from './support/tcp-proxy';

/**
 * "No message may be consumed from a queue whose dead-letter exchange and delivery limit are not
 * in force": the management API unreachable at start, and a policy overridden while running.
 */
const topology = testTopology([{ name: 'test.gated' }, { name: 'test.overridden' }]);
let vhost: TestVhost;
let proxy: TcpProxy;
const runtimes: Messaging[] = [];

beforeAll(async () => {
  vhost = await createTestVhost('policy-gate');
  proxy = await tcpProxy({
    host: new URL(vhost.management.baseUrl).hostname,
    port: Number(new URL(vhost.management.baseUrl).port),
  });
});

afterAll(async () => {
  await Promise.all(runtimes.map((m) => m.stop(1000)));
  await proxy.close();
  await vhost.delete();
});

/** Queues and messages put there by hand (no policy exists yet: nothing of ours applied one). */
async function publishRaw(queue: string, count: number): Promise<string[]> {
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createConfirmChannel();
    await declareTopology(ch, plan(topology));
    const ids = Array.from({ length: count }, (_, i) => mention(`raw ${i}`)).map((e) => {
      ch.publish('test.events', queue, Buffer.from(JSON.stringify(e)), { messageId: e.id, persistent: true });
      return e.id;
    });
    await ch.waitForConfirms();
    return ids;
  } finally {
    await conn.close();
  }
}

/** The policy as stored at this moment (the queue's effective policy is reported ~5 s late). */
async function storedPolicy(name: string): Promise<Record<string, unknown> | undefined> {
  const res = await managementRequest(
    vhost.management,
    'GET',
    `/policies/${encodeURIComponent(vhost.vhost)}/${encodeURIComponent(name)}`,
  );
  return res.ok ? ((await res.json()) as { definition: Record<string, unknown> }).definition : undefined;
}

async function effectivePolicy(queue: string): Promise<Record<string, unknown> | undefined> {
  const res = await managementRequest(
    vhost.management,
    'GET',
    `/queues/${encodeURIComponent(vhost.vhost)}/${encodeURIComponent(queue)}`,
  );
  return ((await res.json()) as { effective_policy_definition?: Record<string, unknown> }).effective_policy_definition;
}

it('consumes nothing while the management API is unreachable; once it answers, the policy is in force first, then messages are consumed', async () => {
  const ids = await publishRaw('test.gated', 5);
  const { logger, lines } = recordingLogger();
  const messaging = createMessaging({
    url: vhost.url,
    service: 'policy-gate-test',
    topology,
    logger,
    registry: new Registry(),
    classifiers: [],
    managementUrl: `http://127.0.0.1:${proxy.port}`,
  });
  runtimes.push(messaging);
  const handled: Array<{ id: string; policy: Record<string, unknown> | undefined }> = [];
  messaging.consume({
    queue: 'test.gated',
    name: 'records',
    validate: validateTestEvent,
    handle: async (e) => void handled.push({ id: e.id, policy: await storedPolicy('messaging:test.gated') }),
  });
  const started = messaging.start();

  await eventually('runtime connected to the broker', () => messaging.readiness().amqp);
  // It keeps trying the management API, and consumes nothing meanwhile: after three refused tries
  // (backoff 0.5 s, 1 s, …) the 5 messages are all still there.
  const refused = () => lines.filter((l) => String(l.msg).startsWith('could not apply queue policies')).length;
  await eventually('three refused attempts to apply the policies', () => refused() >= 3, 30_000);
  expect(handled).toEqual([]);
  expect(messaging.readiness()).toEqual({ amqp: true, consumers: false });
  expect(await vhost.ready('test.gated')).toBe(5);

  await proxy.open();
  await started;
  await eventually('all 5 consumed', () => handled.length === 5, 30_000);
  expect(handled.map((h) => h.id).sort()).toEqual([...ids].sort());
  // Each one was handled once its queue's policy existed, and the broker reports it in force.
  const dlx = { 'dead-letter-exchange': 'dlx', 'dead-letter-routing-key': 'test.gated', 'delivery-limit': 3 };
  for (const h of handled) expect(h.policy).toMatchObject(dlx);
  await eventually(
    'effective policy reported',
    async () => (await effectivePolicy('test.gated'))?.['dead-letter-exchange'] === 'dlx',
    40_000,
  );
  expect(await effectivePolicy('test.gated')).toMatchObject(dlx);
  expect(messaging.readiness()).toEqual({ amqp: true, consumers: true });
}, 60_000);

it('stops consuming while an operator policy overrides the dead-letter exchange, and resumes when it is gone', async () => {
  const messaging = createMessaging({
    url: vhost.url,
    service: 'policy-override-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    policyCheckIntervalMs: 300,
  });
  runtimes.push(messaging);
  const handled: string[] = [];
  messaging.consume({
    queue: 'test.overridden',
    name: 'records',
    validate: validateTestEvent,
    handle: async (e) => void handled.push(e.id),
  });
  await messaging.start();
  const [first] = await publishRaw('test.overridden', 1);
  await eventually('first consumed', () => handled.includes(first), 20_000);

  // A higher-priority policy without dead-lettering replaces ours for this queue.
  const override = `/policies/${encodeURIComponent(vhost.vhost)}/operator-override`;
  await managementRequest(vhost.management, 'PUT', override, {
    pattern: '^test\\.overridden$',
    'apply-to': 'queues',
    priority: 100,
    definition: { 'max-length': 1000 },
  });
  await eventually('consumer stopped', () => !messaging.readiness().consumers, 20_000);
  // The queue has no consumer now (exact, from the queue itself), and the guard keeps checking while
  // the override holds (every second while a consumer waits): after two more checks with the second
  // message waiting, it still has not resumed.
  const queueState = async () => {
    const conn = await amqplib.connect(vhost.url);
    try {
      const { messageCount, consumerCount } = await (await conn.createChannel()).checkQueue('test.overridden');
      return { messageCount, consumerCount };
    } finally {
      await conn.close().catch(() => undefined);
    }
  };
  await eventually(
    'the consumer is cancelled at the broker',
    async () => (await queueState()).consumerCount === 0,
    20_000,
  );
  const [second] = await publishRaw('test.overridden', 1);
  const checks = async () =>
    (await messaging.metrics.policyChecks.get()).values.find((v) => v.labels.outcome === 'ok')?.value ?? 0;
  const before = await checks();
  await eventually(
    'the guard checked twice more while the override holds',
    async () => (await checks()) >= before + 2,
    30_000,
  );
  expect(handled).toEqual([first]);
  expect(messaging.readiness().consumers).toBe(false);
  expect(await queueState()).toEqual({ messageCount: 1, consumerCount: 0 });

  await managementRequest(vhost.management, 'DELETE', override);
  await eventually('second consumed after the override is gone', () => handled.includes(second), 20_000);
  expect(messaging.readiness().consumers).toBe(true);
}, 60_000);
