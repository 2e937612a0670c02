// The generated definitions on the real local broker: imported into a vhost of this test (users of
// its own, deleted afterwards), each service user does its own work and is refused
// (ACCESS_REFUSED, reply 403) everything else: a publish, a consume and a declare it has no business with.
import { randomBytes } from 'node:crypto';
import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { COMMUNITY_TOPOLOGY, EVENTS_EXCHANGE, SERVICE_ACCESS } from '@community/contracts';
import {
  managementRequest,
  ownQueueNames,
  planTopology,
  queueExchangeName,
  type ServiceAccess,
} from '@community/messaging';
import { createTestVhost, eventually, type TestVhost } from '@community/testing';
import { buildDefinitions, devPassword } from '../src';

const plan = planTopology(COMMUNITY_TOPOLOGY);
const argsOf = (queue: string) => plan.queues.find((q) => q.name === queue)!.arguments;
const ACCESS_REFUSED = 403;
const PRECONDITION_FAILED = 406;
const WORK_QUEUES = COMMUNITY_TOPOLOGY.queues.map((q) => q.name);

let vhost: TestVhost;
let prefix: string;
const connections: ChannelModel[] = [];

beforeAll(async () => {
  vhost = await createTestVhost('infra-defs');
  prefix = `t${randomBytes(3).toString('hex')}-`;
  const defs = buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix });
  const res = await managementRequest(vhost.management, 'POST', '/definitions', defs);
  if (!res.ok) throw new Error(`definitions import: HTTP ${res.status} ${await res.text()}`);
});

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  const users = buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix }).users.map((u) => u.name);
  await managementRequest(vhost.management, 'POST', '/users/bulk-delete', { users });
  await vhost.delete();
});

async function connectAs(user: string): Promise<ChannelModel> {
  const base = new URL(vhost.url);
  const conn = await amqplib.connect(
    `${base.protocol}//${encodeURIComponent(prefix + user)}:${encodeURIComponent(devPassword(user))}@${base.host}/${encodeURIComponent(vhost.vhost)}`,
  );
  conn.on('error', () => undefined);
  connections.push(conn);
  return conn;
}

/** Runs `op` on a fresh channel; resolves to the AMQP reply code it failed with, or 0. */
async function outcome(conn: ChannelModel, op: (ch: Channel) => Promise<unknown>): Promise<number> {
  const ch = await conn.createConfirmChannel();
  ch.on('error', () => undefined);
  try {
    await op(ch);
    await ch.close();
    return 0;
  } catch (err) {
    return Number((err as { code?: number }).code ?? -1);
  }
}

/** Publishes and waits for the broker's confirm; a refused publish closes the channel with its reply code. */
const publishConfirmed =
  (exchange: string, routingKey: string, properties: amqplib.Options.Publish = {}) =>
  (ch: Channel) =>
    new Promise<void>((resolve, reject) => {
      let code = -1;
      let closed = false;
      ch.once('error', (e: { code?: number }) => (code = e.code ?? -1));
      ch.once('close', () => {
        closed = true;
        reject(Object.assign(new Error('channel closed'), { code }));
      });
      (ch as amqplib.ConfirmChannel).publish(
        exchange,
        routingKey,
        Buffer.from('{}'),
        { persistent: true, ...properties },
        (err) => {
          if (!err) return resolve();
          // Unconfirmed publishes fail when the channel closes: the close (with its code) decides.
          setTimeout(() => closed || reject(Object.assign(err, { code: -2 })), 1000);
        },
      );
    });

const consumeOnce = (queue: string) => async (ch: Channel) => {
  const { consumerTag } = await ch.consume(queue, () => undefined);
  await ch.cancel(consumerTag);
};

const someoneElsesQueue = (a: ServiceAccess) =>
  COMMUNITY_TOPOLOGY.queues.map((q) => q.name).find((q) => !a.consumes.includes(q))!;

describe.each(SERVICE_ACCESS.map((a) => [a.user, a] as const))('%s', (_user, access) => {
  it('does its own work: declares and binds its queues, publishes its routing keys, consumes, sends retry copies', async () => {
    const conn = await connectAs(access.user);
    const own = ownQueueNames(plan, access.consumes);
    for (const q of own)
      expect(await outcome(conn, (ch) => ch.assertQueue(q, { durable: true, arguments: argsOf(q) }))).toBe(0);
    for (const b of plan.bindings.filter((x) => own.includes(x.queue)))
      expect(await outcome(conn, (ch) => ch.bindQueue(b.queue, b.exchange, b.routingKey))).toBe(0);
    for (const p of access.publishes)
      for (const key of p.routingKeys) expect(await outcome(conn, publishConfirmed(p.exchange, key))).toBe(0);
    for (const q of access.consumes) expect(await outcome(conn, consumeOnce(q))).toBe(0);
    // Retry/DLQ copies through each of its queues' own exchange, and sends by name to a queue's own.
    for (const work of access.consumes) {
      for (const q of ownQueueNames(plan, [work]).filter((n) => n !== work))
        expect(await outcome(conn, publishConfirmed(queueExchangeName(work), q))).toBe(0);
    }
    for (const q of access.sendsTo) expect(await outcome(conn, publishConfirmed(queueExchangeName(q), q))).toBe(0);
    for (const q of access.reads)
      expect(await outcome(conn, (ch) => ch.get(q, { noAck: false }).then((m) => m && ch.nack(m)))).toBe(0);
  });

  it('is refused a publish it has no business with: another routing key, the dead-letter exchange', async () => {
    const conn = await connectAs(access.user);
    const published = new Set(access.publishes.flatMap((p) => p.routingKeys));
    const foreignKey = ['notification.created', 'security.alert'].find((k) => !published.has(k))!;
    expect(await outcome(conn, publishConfirmed(EVENTS_EXCHANGE, foreignKey))).toBe(ACCESS_REFUSED);
    expect(
      await outcome(conn, publishConfirmed(COMMUNITY_TOPOLOGY.deadLetterExchange!, access.consumes[0] ?? 'x')),
    ).toBe(ACCESS_REFUSED);
  });

  it('may not write to the default exchange at all: not into its own queues, not into anyone else’s', async () => {
    const conn = await connectAs(access.user);
    for (const q of [...ownQueueNames(plan, access.consumes), someoneElsesQueue(access)])
      expect(await outcome(conn, publishConfirmed('', q))).toBe(ACCESS_REFUSED);
  });

  it('is refused publishing into another service’s queues through their own exchanges', async () => {
    const conn = await connectAs(access.user);
    // The reconciler replays dead-lettered messages to every work queue (its sendsTo): the one writer of all of them.
    const theirs = WORK_QUEUES.filter((q) => !access.consumes.includes(q) && !access.sendsTo.includes(q));
    if (access.user !== 'reconciler') expect(theirs.length).toBeGreaterThan(0);
    for (const q of theirs) expect(await outcome(conn, publishConfirmed(queueExchangeName(q), q))).toBe(ACCESS_REFUSED);
  });

  it('cannot pass itself off as another user: a user-id other than its own is refused by the broker', async () => {
    const conn = await connectAs(access.user);
    const [exchange, key] = access.publishes[0]
      ? [access.publishes[0].exchange, access.publishes[0].routingKeys[0]]
      : [queueExchangeName(access.consumes[0]), `${access.consumes[0]}.dlq`];
    expect(await outcome(conn, publishConfirmed(exchange, key, { userId: prefix + access.user }))).toBe(0);
    expect(await outcome(conn, publishConfirmed(exchange, key, { userId: `${prefix}demo-community-api-x` }))).toBe(
      PRECONDITION_FAILED,
    );
  });

  it('is refused consuming another service’s queue', async () => {
    const conn = await connectAs(access.user);
    expect(await outcome(conn, consumeOnce(someoneElsesQueue(access)))).toBe(ACCESS_REFUSED);
  });

  it('is refused declaring another service’s queue, a queue of its own invention and an exchange', async () => {
    const conn = await connectAs(access.user);
    const other = someoneElsesQueue(access);
    expect(await outcome(conn, (ch) => ch.assertQueue(other, { durable: true, arguments: argsOf(other) }))).toBe(
      ACCESS_REFUSED,
    );
    expect(await outcome(conn, (ch) => ch.assertQueue(`${access.user}.invented`, { durable: true }))).toBe(
      ACCESS_REFUSED,
    );
    expect(await outcome(conn, (ch) => ch.assertExchange(EVENTS_EXCHANGE, 'topic', { durable: true }))).toBe(
      ACCESS_REFUSED,
    );
  });
});

it('the reported injection: email-service cannot put a forged user.mentioned into notification-service.critical by any route', async () => {
  const conn = await connectAs('email-service');
  const before = await vhost.ready('notification-service.critical');
  const forged = { messageId: 'forged', type: 'user.mentioned', contentType: 'application/json' };
  expect(await outcome(conn, publishConfirmed('', 'notification-service.critical', forged))).toBe(ACCESS_REFUSED);
  expect(
    await outcome(
      conn,
      publishConfirmed(queueExchangeName('notification-service.critical'), 'notification-service.critical', forged),
    ),
  ).toBe(ACCESS_REFUSED);
  expect(await outcome(conn, publishConfirmed(EVENTS_EXCHANGE, 'user.mentioned', forged))).toBe(ACCESS_REFUSED);
  expect(await vhost.ready('notification-service.critical')).toBe(before);
});

it('a published event reaches the queues bound to it: the imported bindings route', async () => {
  const conn = await connectAs('demo-community-api');
  expect(await outcome(conn, publishConfirmed(EVENTS_EXCHANGE, 'post.published'))).toBe(0);
  await eventually(
    'post.published in feed-service.activity',
    async () => (await vhost.ready('feed-service.activity')) >= 1,
  );
});
