import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { COMMUNITY_TOPOLOGY, validate } from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import type { DemoService } from '../src/service';
import { startTraffic } from '../src/traffic/generator';
import { createUsers, testService } from './helpers';

/** The app as main.ts composes it (outbox relay, broker), on a private vhost and database. */
const TAP = 'test.tap';
// The system's topology plus a queue that sees every event, so types nobody consumes yet show up too.
const topology: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: [
    ...COMMUNITY_TOPOLOGY.queues,
    { name: TAP, bindings: [{ exchange: 'community.events', routingKeys: ['#'] }], retryDelaysMs: [] },
  ],
};

let vhost: TestVhost;
let db: TestDatabase;
let service: DemoService;
let pool: Pool;
let app: FastifyInstance;

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('demo-api'), createTestDatabase('demo_api_broker')]);
  service = testService(db, { vhost, topology });
  ({ pool, app } = service);
  await app.listen({ port: 0, host: '127.0.0.1' });
  await service.start();
  await createUsers(app, ['ada', 'bob']);
});

afterAll(async () => {
  await service.stop();
  await app.close();
  await Promise.all([vhost.delete(), db.drop()]);
});

async function drained(): Promise<void> {
  await eventually(
    'outbox drained',
    async () => (await pool.query('SELECT 1 FROM outbox_messages WHERE sent_at IS NULL LIMIT 1')).rowCount === 0,
    60_000,
  );
}

it('is ready when the database answers, the broker is connected and the relay runs', async () => {
  const res = await app.inject({ method: 'GET', url: '/readyz' });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toEqual({
    status: 'ready',
    checks: { accepting: true, database: true, amqp: true, relay: true },
    details: { broker: { publishes: 'flowing' } },
  });
});

it('delivers a mention to notification-service.critical with the contract properties', async () => {
  const postRes = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: { 'x-user-id': 'bob' },
    payload: { title: 'Queues', body: 'On separation.' },
  });
  const res = await app.inject({
    method: 'POST',
    url: `/v1/posts/${postRes.json().id}/comments`,
    headers: { 'x-user-id': 'bob', 'x-correlation-id': 'corr-mention-1' },
    payload: { body: 'What do you think, @ada?' },
  });
  expect(res.statusCode).toBe(201);
  expect(res.headers['x-correlation-id']).toBe('corr-mention-1');
  await drained();

  const [message] = await eventually('the mention in the critical queue', async () => {
    const got = await vhost.take('notification-service.critical', 10);
    return got.length > 0 ? got : undefined;
  });
  const body = JSON.parse(message.body);
  expect(validate(body).ok).toBe(true);
  expect(body).toMatchObject({
    type: 'user.mentioned',
    version: 1,
    producer: 'community-api',
    correlationId: 'corr-mention-1',
    data: { mentionedUserId: 'ada', actorId: 'bob', commentId: res.json().id },
  });
  expect(message.routingKey).toBe('user.mentioned');
  expect(message.properties).toMatchObject({
    message_id: body.id,
    type: 'user.mentioned',
    correlation_id: 'corr-mention-1',
    content_type: 'application/json',
    delivery_mode: 2,
    headers: { 'x-schema-version': 1 },
  });
  expect(typeof (message.properties as { timestamp?: number }).timestamp).toBe('number');
});

it('publishes every event type the API produces, in the order of each user', async () => {
  await vhost.take(TAP, 1000); // what the earlier tests published
  const as = { 'x-user-id': 'ada' };
  const post = await app.inject({
    method: 'POST',
    url: '/v1/posts',
    headers: as,
    payload: { title: 'Hello', body: 'World' },
  });
  await app.inject({
    method: 'POST',
    url: `/v1/posts/${post.json().id}/comments`,
    headers: { 'x-user-id': 'bob' },
    payload: { body: 'hi @ada' },
  });
  await app.inject({
    method: 'POST',
    url: '/v1/reactions',
    headers: { 'x-user-id': 'bob' },
    payload: { targetType: 'post', targetId: post.json().id, emoji: '👍' },
  });
  await app.inject({ method: 'POST', url: '/v1/users/ada/follow', headers: { 'x-user-id': 'bob' } });
  await app.inject({ method: 'DELETE', url: '/v1/users/ada/follow', headers: { 'x-user-id': 'bob' } });
  await app.inject({
    method: 'POST',
    url: '/v1/security-alerts',
    payload: { userId: 'ada', kind: 'new-login', detail: 'Safari' },
  });
  await app.inject({
    method: 'POST',
    url: '/v1/users',
    payload: { id: 'ada', email: 'ada@example.test', displayName: 'Ada Lovelace' },
  });
  await drained();

  const messages = await eventually('all events on the tap queue', async () => {
    const ready = await vhost.ready(TAP);
    return ready >= 8 ? vhost.take(TAP, 100) : undefined;
  });
  // Everything here concerns ada, so it is one aggregate: the queue holds it in the order it happened.
  expect(messages.map((m) => m.properties.type)).toEqual([
    'post.published',
    'comment.created',
    'user.mentioned',
    'reaction.added',
    'user.followed',
    'user.unfollowed',
    'security.alert',
    'user.upserted',
  ]);
  for (const m of messages) expect(validate(JSON.parse(m.body)).ok).toBe(true);
});

it('the traffic generator drives the API with a realistic mix, without errors, and everything gets published', async () => {
  const { port } = app.server.address() as AddressInfo;
  const traffic = startTraffic({ baseUrl: `http://127.0.0.1:${port}`, rate: 60, logger: testLogger(), users: 8 });
  await traffic.seeded;
  // Until it has made more than 100 requests, however long the machine takes to serve them.
  await eventually(
    'the generator made more than 100 requests',
    () => traffic.stats().ok + traffic.stats().failed > 100,
    60_000,
    50,
  );
  await traffic.stop();
  const stats = traffic.stats();
  expect(stats.failed).toBe(0);
  expect(stats.ok).toBeGreaterThan(100);
  await drained();
  const { rows } = await pool.query<{ event_type: string }>('SELECT DISTINCT event_type FROM outbox_messages');
  const types = rows.map((r) => r.event_type);
  expect(types).toEqual(
    expect.arrayContaining(['user.upserted', 'post.published', 'comment.created', 'reaction.added', 'user.followed']),
  );
  const emails = await pool.query<{ email: string }>(`SELECT email FROM community_users WHERE id = 'grace'`);
  expect(emails.rows[0].email).toBe('grace@example.test');
}, 90_000);
