import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, eventually, type TestDatabase } from '@community/testing';
import { startPrivateRabbit, type PrivateRabbit } from './chaos/private-deps';
import { appsEnv, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * A RabbitMQ memory alarm for 30 s. `set_vm_memory_high_watermark` is a node setting that blocks every
 * publisher on the node, so it is set on a RabbitMQ node of this test's own (the fault suite's private
 * node, e2e/chaos/private-deps.ts): nothing else on the machine is blocked, and `npm test` runs it in the
 * isolated run, beside the regular suite (docs/TESTING.md).
 *
 * Every app runs as a process (as `npm start` runs them). While publishes are blocked:
 * - no app exits;
 * - a comment with a mention is still accepted by the API (it goes to the outbox, whose relay
 *   cannot publish it yet), and the API's /readyz details say the broker blocks its publishes;
 * then, the watermark restored (to the value read before, whatever happens in between):
 * - every app answers /readyz 200 with publishes flowing again, on its own;
 * - the mention made during the alarm reaches the inbox and the mailbox.
 * (SMTP down: apps/email-service/test/outage.test.ts, 30 s, in process: no exit, nothing lost.)
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
const ALARM_MS = 30_000;
let rabbit: PrivateRabbit;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};

beforeAll(async () => {
  [rabbit, db, smtp] = await Promise.all([startPrivateRabbit(), createTestDatabase('e2e_alarm'), startSmtpSink()]);
  const [api, notifications, email] = await Promise.all([freePort(), freePort(), freePort()]);
  const env = {
    AMQP_URL: rabbit.amqpUrl,
    RABBITMQ_MANAGEMENT_URL: rabbit.managementUrl,
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
  };
  apps.notifications = await startApp('notification-service', notifications, env);
  [apps.email, apps.api] = await Promise.all([
    startApp('email-service', email, env),
    startApp('demo-community-api', api, env),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp.close();
  await Promise.all([rabbit?.stop(), db?.drop()]);
});

/** The watermark as `rabbitmqctl environment` reports it: a fraction, or `{absolute,N}`. */
async function currentWatermark(): Promise<string[]> {
  const env = await rabbit.ctl('environment');
  const absolute = env.match(/\{vm_memory_high_watermark,\s*\{absolute,\s*"?([^"}\s]+)"?\}\}/);
  if (absolute) return ['absolute', absolute[1]];
  const relative = env.match(/\{vm_memory_high_watermark,\s*([0-9.]+)\}/);
  return [relative ? relative[1] : '0.4']; // RabbitMQ's default when it cannot be read
}

/** The broker's nodes as its management API lists them (`mem_alarm`: publishers blocked). */
async function brokerNodes(): Promise<Array<{ name: string; mem_alarm: boolean }>> {
  const res = await fetch(`${rabbit.managementUrl}/api/nodes`, {
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
  });
  if (!res.ok) throw new Error(`GET /api/nodes: ${res.status}`);
  return (await res.json()) as Array<{ name: string; mem_alarm: boolean }>;
}

const readyz = async (app: App) => {
  const res = await fetch(`${app.url}/readyz`).catch(() => undefined);
  return res
    ? { status: res.status, body: (await res.json()) as { details?: { broker?: { publishes?: string } } } }
    : { status: 0, body: {} };
};

it('a 30 s memory alarm: no app exits, the API says the broker blocks it, and everything resumes on its own', async () => {
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
    { title: 'Alarms', body: 'What happens?' },
    { 'x-user-id': 'bob' },
  );
  expect(post.status).toBe(201);
  for (const app of Object.values(apps)) expect((await readyz(app)).status).toBe(200);

  const exits: string[] = [];
  for (const app of Object.values(apps))
    app.proc.once('exit', (code, signal) => exits.push(`${app.name} exited ${signal ?? code}`));

  const previous = await currentWatermark();
  let comment: { status: number; body: { id: string } } | undefined;
  const apiPublishes: string[] = [];
  try {
    await rabbit.ctl('set_vm_memory_high_watermark', '0.0000001');
    const until = Date.now() + ALARM_MS;
    // The alarm is on once the node reports it (it checks its memory on its own timer), not after a guess.
    await eventually(
      'the broker in a memory alarm',
      async () => (await brokerNodes()).every((n) => n.mem_alarm === true),
      30_000,
      200,
    );
    // Accepted while the broker refuses publishes: the event waits in the outbox.
    comment = await http<{ id: string }>(
      'POST',
      `${apps.api.url}/v1/posts/${post.body.id}/comments`,
      { body: 'During the alarm, @ada' },
      { 'x-user-id': 'bob' },
    );
    while (Date.now() < until) {
      const probe = await readyz(apps.api);
      apiPublishes.push(probe.body.details?.broker?.publishes ?? `status ${probe.status}`);
      for (const app of Object.values(apps)) expect(app.proc.exitCode).toBeNull();
      await sleep(500);
    }
  } finally {
    await rabbit.ctl('set_vm_memory_high_watermark', ...previous);
  }

  expect(comment?.status).toBe(201);
  expect(apiPublishes).toContain('blocked'); // its relay tried to publish the comment's events
  expect(exits).toEqual([]);

  for (const app of Object.values(apps)) {
    await eventually(
      `${app.name} ready with publishes flowing`,
      async () => {
        const probe = await readyz(app);
        return probe.status === 200 && probe.body.details?.broker?.publishes === 'flowing';
      },
      60_000,
      500,
    );
  }
  const inbox = async () =>
    (
      await http<{ items: Array<{ type: string; resourceId: string }> }>(
        'GET',
        `${apps.notifications.url}/v1/users/ada/notifications`,
        undefined,
        {
          authorization: `Bearer ${jwt(SECRET, { sub: 'ada' })}`,
        },
      )
    ).body.items;
  await eventually(
    'the mention made during the alarm in the inbox',
    async () => (await inbox()).some((n) => n.type === 'mention' && n.resourceId === comment?.body.id),
    60_000,
    500,
  );
  await eventually(
    'its email',
    () => smtp.mails.some((m) => m.to.includes('ada@example.test') && /mention/i.test(m.subject ?? '')),
    60_000,
    500,
  );
  expect(exits).toEqual([]);
}, 240_000);
