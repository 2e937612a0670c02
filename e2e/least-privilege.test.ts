import { randomBytes } from 'node:crypto';
import { managementRequest } from '@community/messaging';
import { createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost } from '@community/testing';
import { buildDefinitions, devPassword } from '../infra/tools/src';
import { appsEnv, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * The apps as `npm start` and a deployment run them: the generated definitions imported (here into
 * a vhost of this test, with users of its own), each app connected as its own least-privilege user
 * with AMQP_TOPOLOGY=own-queues. A mention still reaches the inbox and the mailbox, and the broker
 * shows each app's connection under its own user.
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
const prefix = `lp${randomBytes(3).toString('hex')}-`;
let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};

const amqpUrlFor = (service: string): string => {
  const base = new URL(vhost.url);
  return `${base.protocol}//${encodeURIComponent(prefix + service)}:${encodeURIComponent(devPassword(service))}@${base.host}/${encodeURIComponent(vhost.vhost)}`;
};

beforeAll(async () => {
  [vhost, db, smtp] = await Promise.all([createTestVhost('e2e-lp'), createTestDatabase('e2e_lp'), startSmtpSink()]);
  const imported = await managementRequest(
    vhost.management,
    'POST',
    '/definitions',
    buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix }),
  );
  if (!imported.ok) throw new Error(`definitions import: HTTP ${imported.status} ${await imported.text()}`);
  const [api, notifications, email, reconciler] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const env = {
    AMQP_TOPOLOGY: 'own-queues',
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
  };
  [apps.notifications, apps.email, apps.api, apps.reconciler] = await Promise.all([
    startApp('notification-service', notifications, { ...env, AMQP_URL: amqpUrlFor('notification-service') }),
    startApp('email-service', email, { ...env, AMQP_URL: amqpUrlFor('email-service') }),
    startApp('demo-community-api', api, { ...env, AMQP_URL: amqpUrlFor('demo-community-api') }),
    // Its DLQ console reads every DLQ and its watchdog the management API, as the reconciler user
    // (tag monitoring), not as whoever the test environment's RABBITMQ_MANAGEMENT_URL names.
    startApp('reconciler', reconciler, { ...env, AMQP_URL: amqpUrlFor('reconciler'), RABBITMQ_MANAGEMENT_URL: '' }),
  ]);
}, 90_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp.close();
  const users = buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix }).users.map((u) => u.name);
  await managementRequest(vhost.management, 'POST', '/users/bulk-delete', { users });
  await Promise.all([vhost.delete(), db.drop()]);
});

it('each app connects as its own user (all ready), and a mention reaches the inbox and the mailbox', async () => {
  const connections = await eventually(
    'every app connected',
    async () => {
      const res = await managementRequest(
        vhost.management,
        'GET',
        `/vhosts/${encodeURIComponent(vhost.vhost)}/connections`,
      );
      const rows = (await res.json()) as Array<{ user: string; client_properties?: { connection_name?: string } }>;
      return new Set(rows.map((r) => r.user)).size >= 4 ? rows : undefined;
    },
    15_000,
  );
  expect(new Set(connections.map((c) => c.user))).toEqual(
    new Set(['demo-community-api', 'notification-service', 'email-service', 'reconciler'].map((s) => prefix + s)),
  );

  for (const [id, name] of [
    ['ada', 'Ada'],
    ['bob', 'Bob'],
  ]) {
    expect(
      (await http('POST', `${apps.api.url}/v1/users`, { id, email: `${id}@example.test`, displayName: name })).status,
    ).toBe(201);
  }
  const post = await http<{ id: string }>(
    'POST',
    `${apps.api.url}/v1/posts`,
    { title: 'Least privilege', body: 'Who may publish?' },
    { 'x-user-id': 'bob' },
  );
  const comment = await http<{ id: string }>(
    'POST',
    `${apps.api.url}/v1/posts/${post.body.id}/comments`,
    { body: 'Ask @ada' },
    { 'x-user-id': 'bob' },
  );
  expect(comment.status).toBe(201);

  await eventually(
    "the mention in ada's inbox",
    async () => {
      const inbox = await http<{ items: Array<{ type: string; resourceId: string }> }>(
        'GET',
        `${apps.notifications.url}/v1/users/ada/notifications?limit=10`,
        undefined,
        {
          authorization: `Bearer ${jwt(SECRET, { sub: 'ada' })}`,
        },
      );
      return inbox.body.items.some((n) => n.type === 'mention' && n.resourceId === comment.body.id);
    },
    30_000,
  );
  await eventually('an email to ada', () => smtp.mails.some((m) => m.to.includes('ada@example.test')), 30_000);
});
