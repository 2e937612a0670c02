import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { Registry } from 'prom-client';
import { createMessaging, managementRequest, permissionsFor, type Messaging, type Provisioning } from '../src';
import { declareTopology, plan } from '../src/topology';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import {
  mention,
  recordingLogger,
  testLogger,
  testTopology,
  validateTestEvent,
  type TestEvent,
} from './support/events';

/**
 * A service running as a broker user that may not set policies (no `policymaker` tag), the
 * topology and policies provisioned by an administrator: the runtime checks instead of writing, and
 * consumes once the administrator's policies are in force.
 */
const topology = testTopology([{ name: 'lp.work', routingKeys: ['user.mentioned'] }, { name: 'lp.other' }]);
const topologyPlan = plan(topology);
let vhost: TestVhost;
const users: string[] = [];
const runtimes: Messaging[] = [];

beforeAll(async () => {
  vhost = await createTestVhost('least-priv');
  // The administrator's part (what definitions.json does in a deployment): everything declared, policies set.
  const conn = await amqplib.connect(vhost.url);
  await declareTopology(await conn.createChannel(), topologyPlan);
  await conn.close();
  for (const p of topologyPlan.policies) {
    const res = await managementRequest(
      vhost.management,
      'PUT',
      `/policies/${encodeURIComponent(vhost.vhost)}/${encodeURIComponent(p.name)}`,
      {
        pattern: p.pattern,
        'apply-to': p.applyTo,
        priority: p.priority,
        definition: p.definition,
      },
    );
    expect(res.ok).toBe(true);
  }
});

// One runtime at a time: two would compete for lp.work's messages.
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((m) => m.stop(1000)));
});

afterAll(async () => {
  await managementRequest(vhost.management, 'POST', '/users/bulk-delete', { users });
  await vhost.delete();
});

/** A user with the `management` tag only, and the given permissions on the test vhost; returns its AMQP URL. */
async function user(perms: { configure: string; write: string; read: string }): Promise<string> {
  const name = `lp-${randomBytes(4).toString('hex')}`;
  users.push(name);
  const v = encodeURIComponent(vhost.vhost);
  expect(
    (await managementRequest(vhost.management, 'PUT', `/users/${name}`, { password: 'pw', tags: 'management' })).ok,
  ).toBe(true);
  expect((await managementRequest(vhost.management, 'PUT', `/permissions/${v}/${name}`, perms)).ok).toBe(true);
  const base = new URL(vhost.url);
  return `${base.protocol}//${name}:pw@${base.host}/${v}`;
}

async function run(
  url: string,
  provisioning: Provisioning | undefined,
): Promise<{ messaging: Messaging; handled: TestEvent[] }> {
  const messaging = createMessaging({
    url,
    service: 'least-priv-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    provisioning,
  });
  runtimes.push(messaging);
  const handled: TestEvent[] = [];
  messaging.consume<TestEvent>({
    queue: 'lp.work',
    name: 'records',
    validate: validateTestEvent,
    handle: async (e) => void handled.push(e),
  });
  await messaging.start();
  return { messaging, handled };
}

async function policyNames(): Promise<string[]> {
  const res = await managementRequest(vhost.management, 'GET', `/policies/${encodeURIComponent(vhost.vhost)}`);
  return ((await res.json()) as Array<{ name: string }>).map((p) => p.name).sort();
}

it('own-queues: with only its own queues configurable, it declares them, consumes and publishes; it writes no policy', async () => {
  const perms = permissionsFor(topology, topologyPlan, {
    user: 'x',
    consumes: ['lp.work'],
    publishes: [{ exchange: 'test.events', routingKeys: ['user.mentioned'] }],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  });
  const before = await policyNames();
  const { messaging, handled } = await run(await user(perms), 'own-queues');
  const event = mention('least privilege');
  await messaging.publisher.publish(event);
  await eventually('the event consumed', () => handled.some((e) => e.id === event.id), 20_000);
  expect(messaging.readiness()).toEqual({ amqp: true, consumers: true });
  expect(await policyNames()).toEqual(before);
});

it('own-queues, without any write on the default exchange: its retry copies and its DLQ copy go through its queue’s own exchange, and a send by name too', async () => {
  const perms = permissionsFor(topology, topologyPlan, {
    user: 'x',
    consumes: ['lp.work'],
    publishes: [{ exchange: 'test.events', routingKeys: ['user.mentioned'] }],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  });
  expect(new RegExp(perms.write).test('amq.default')).toBe(false);
  const messaging = createMessaging({
    url: await user(perms),
    service: 'least-priv-retries',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
    provisioning: 'own-queues',
  });
  runtimes.push(messaging);
  const attempts = new Map<string, number>();
  messaging.consume<TestEvent>({
    queue: 'lp.work',
    name: 'always-fails',
    validate: validateTestEvent,
    handle: async (e) => {
      attempts.set(e.id, (attempts.get(e.id) ?? 0) + 1);
      throw new Error('transient, every time');
    },
  });
  await messaging.start();
  const [byTopic, byName] = [mention('through the tiers'), mention('sent by name')];
  await messaging.publisher.publish(byTopic);
  await messaging.publisher.publish(byName, { exchange: '', routingKey: 'lp.work' });
  // Counted first, then taken: a take removes what it reads, so taking while only one had arrived
  // would lose it from every later look.
  await eventually('both in the DLQ after the last tier', async () => (await vhost.ready('lp.work.dlq')) >= 2, 60_000);
  const dead = (await vhost.take('lp.work.dlq')).filter((m) =>
    [byTopic.id, byName.id].includes(String(m.properties.message_id)),
  );
  expect(dead).toHaveLength(2);
  for (const m of dead)
    expect(m.properties.headers).toMatchObject({
      'x-error-kind': 'retries-exhausted',
      'x-attempts': 3,
      'x-original-queue': 'lp.work',
    });
  expect([attempts.get(byTopic.id), attempts.get(byName.id)]).toEqual([3, 3]);
});

it('declare-all, the policy apply refused (no policymaker tag): it checks instead of retrying forever, and consumes', async () => {
  const { messaging, handled } = await run(await user({ configure: '.*', write: '.*', read: '.*' }), undefined);
  const event = mention('policy apply refused');
  await messaging.publisher.publish(event);
  await eventually('the event consumed', () => handled.some((e) => e.id === event.id), 20_000);
});

it('own-queues: the publisher does not become ready while an exchange the administrator should have provisioned is missing', async () => {
  const perms = permissionsFor(topology, topologyPlan, {
    user: 'x',
    consumes: [],
    publishes: [{ exchange: 'test.events', routingKeys: ['user.mentioned'] }],
    sendsTo: [],
    reads: [],
    tags: ['management'],
  });
  const other = testTopology([{ name: 'lp.work' }]);
  other.exchanges.push({ name: 'lp.missing', type: 'topic' });
  const { logger, lines } = recordingLogger();
  const messaging = createMessaging({
    url: await user(perms),
    service: 'least-priv-missing',
    topology: other,
    logger,
    registry: new Registry(),
    classifiers: [],
    provisioning: 'own-queues',
  });
  runtimes.push(messaging);
  let outcome: 'waiting' | 'started' | Error = 'waiting';
  const started = messaging.start().then(
    () => void (outcome = 'started'),
    (err: Error) => void (outcome = err),
  );
  // The passive check fails (NOT_FOUND) and is retried: wait until it has failed twice, the second
  // time after start() had every chance to settle, and it has not: not ready, and not given up.
  const missingChecks = () =>
    lines.filter(
      (l) => l.msg === 'publisher channel setup failed' && /NOT_FOUND.*lp\.missing/.test(JSON.stringify(l.err)),
    ).length;
  await eventually('the passive check of lp.missing failed twice', () => missingChecks() >= 2, 30_000, 20);
  expect(outcome).toBe('waiting');
  // The administrator provisions the exchange: the next check passes and the publisher becomes ready.
  const conn = await amqplib.connect(vhost.url);
  await (await conn.createChannel()).assertExchange('lp.missing', 'topic', { durable: true });
  await conn.close();
  await started;
  expect(outcome).toBe('started');
  expect(messaging.readiness()).toMatchObject({ amqp: true });
});
