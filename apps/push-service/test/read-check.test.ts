import { generateKeyPairSync, randomUUID } from 'node:crypto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { buildEvent } from '@community/contracts';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  startAppProcess,
  type AppProcess,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { loadPushConfig } from '../src/config';
import { READ_IN_APP_REASON } from '../src/delivery/read-check';
import { createPushService } from '../src/service';
import { bearer, JWT_SECRET, notificationCreated, OPERATORS, startHarness, type Harness } from './support/harness';
import { TestPushServer } from './support/push-server';

// Delay-then-check (docs/PUSH.md "Quiet hours and delay-then-check") against the real
// notification-service, a process of its own on the same database and vhost: a mention goes through
// it (user.mentioned → the inbox → notification.created), push-service holds the push for the
// delay, the user reads it in the app meanwhile, and at the delay's end push-service asks
// notification-service (a signed POST /v1/internal/read-state) and does not push it. The service's
// clock is the test's: the test moves it and polls by hand.
const DELAY_MS = 60_000;
let h: Harness;
let ns: AppProcess;
let push: TestPushServer;
let now = new Date();

let db: TestDatabase | undefined;
let vhost: TestVhost | undefined;

beforeAll(async () => {
  db = await createTestDatabase('push_readcheck');
  vhost = await createTestVhost('push-readcheck');
  push = await new TestPushServer().start();
  ns = await startAppProcess('notification-service', {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    SHUTDOWN_TIMEOUT_MS: '3000',
  });
  h = await startHarness(
    'readcheck',
    { PUSH_READ_CHECK_DELAY_MS: String(DELAY_MS), NOTIFICATION_SERVICE_URL: ns.url },
    { clock: () => now, runPoller: false, db, vhost },
  );
}, 120_000);

afterAll(async () => {
  await ns?.stop();
  await push?.close();
  // The harness drops the database and the vhost; without one (a failed start), the test does.
  if (h) await h.close();
  else await Promise.all([db?.drop(), vhost?.delete()]);
});

interface Row {
  state: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date;
  notification_id: string;
}
const row = async (key: string): Promise<Row | undefined> =>
  (
    await h.svc.pool.query<Row>(
      `SELECT state::text, attempts, last_error, next_attempt_at, notification_id FROM push_deliveries WHERE idempotency_key = $1`,
      [key],
    )
  ).rows[0];

/** A mention as the community API publishes it; notification-service makes the notification. */
function mentioned(userId: string): { key: string; event: ReturnType<typeof buildEvent<'user.mentioned'>> } {
  const commentId = `c-${randomUUID()}`;
  const event = buildEvent(
    'user.mentioned',
    { commentId, postId: 'post-1', actorId: 'bob', mentionedUserId: userId, excerpt: `@${userId} look` },
    { producer: 'community-api' },
  );
  return { key: `mention:${commentId}:${userId}`, event };
}

/** Waits for push-service to hold the key's push (notification-service made it and published it). */
async function held(key: string): Promise<Row> {
  return eventually(`the push of ${key} held`, async () => {
    const r = await row(key);
    return r?.state === 'pending' ? r : undefined;
  });
}

async function readInApp(userId: string, notificationId: string): Promise<void> {
  const res = await fetch(`${ns.url}/v1/users/${userId}/notifications/${notificationId}/read`, {
    method: 'POST',
    headers: bearer(h.token(userId)),
  });
  expect(res.status).toBe(200);
}

it('holds a push for the delay; read in the app meanwhile, it is not pushed; unread, it is', async () => {
  const sub = await h.subscribe(push, 'rya');
  const read = mentioned('rya');
  const unread = mentioned('rya');
  await h.svc.messaging.publisher.publish(read.event);
  await h.svc.messaging.publisher.publish(unread.event);
  const readRow = await held(read.key);
  await held(unread.key);
  expect(readRow).toMatchObject({ attempts: 0, next_attempt_at: new Date(now.getTime() + DELAY_MS) });
  expect(await h.svc.poller.poll()).toBe(0);
  expect(push.for(sub)).toHaveLength(0);

  await readInApp('rya', readRow.notification_id);
  now = new Date(now.getTime() + DELAY_MS);
  await h.svc.poller.poll();

  expect(await row(read.key)).toMatchObject({ state: 'cancelled', attempts: 0, last_error: READ_IN_APP_REASON });
  expect(await row(unread.key)).toMatchObject({ state: 'sent', attempts: 1 });
  const got = push.for(sub);
  expect(got).toHaveLength(1);
  expect(JSON.parse(got[0].plaintext)).toMatchObject({
    title: 'Someone mentioned you in a comment',
    body: '@rya look',
    notificationId: (await row(unread.key))?.notification_id,
  });
  expect(await h.metric('push_read_checks_total', { outcome: 'read' })).toBe(1);
  expect(await h.metric('push_read_checks_total', { outcome: 'unread' })).toBe(1);
  expect(push.refused).toEqual([]);
});

it('a security alert is neither held nor checked', async () => {
  const sub = await h.subscribe(push, 'ryb');
  const alert = notificationCreated({ userId: 'ryb', type: 'security_alert', excerpt: 'new_login: Firefox' });
  const before = await h.metric('messaging_succeeded_total');
  await h.publish(alert);
  await eventually('handled', async () => (await h.metric('messaging_succeeded_total')) > before);
  expect(await row(alert.data.idempotencyKey)).toMatchObject({ state: 'sent', attempts: 1 });
  expect(push.for(sub)).toHaveLength(1);
  expect(await h.metric('push_read_checks_total')).toBe(2);
});

it('a token notification-service does not accept (another signing key) is a failed check: pushed anyway', async () => {
  // A second push-service on the same ledger, signing with a key notification-service does not know;
  // only its poller runs (the harness's service consumes the queue).
  const registry = new Registry();
  const logged: string[] = [];
  const wrong = createPushService(
    loadPushConfig({
      DATABASE_URL: h.db.url,
      AMQP_URL: h.vhost.url,
      JWT_SECRET,
      ADMIN_KEYS: OPERATORS.adminKeys,
      LOG_LEVEL: 'silent',
      PUBLIC_BASE_URL: h.config.PUBLIC_BASE_URL,
      PUSH_ALLOW_INSECURE_LOCALHOST: 'true',
      PUSH_READ_CHECK_DELAY_MS: String(DELAY_MS),
      NOTIFICATION_SERVICE_URL: ns.url,
      PUSH_SERVICE_SIGNING_KEY: generateKeyPairSync('ed25519')
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString(),
    }),
    {
      logger: pino({ level: 'warn' }, { write: (line: string) => logged.push(line) }),
      registry,
      clock: () => now,
      runPoller: false,
    },
  );
  try {
    const sub = await h.subscribe(push, 'ryd');
    const m = mentioned('ryd');
    await h.svc.messaging.publisher.publish(m.event);
    const r = await held(m.key);
    await readInApp('ryd', r.notification_id);
    now = new Date(now.getTime() + DELAY_MS);
    expect(await wrong.poller.poll()).toBe(1);
    expect(await row(m.key)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(push.for(sub)).toHaveLength(1);
    const failed = await registry.getSingleMetric('push_read_checks_total')?.get();
    expect(failed?.values).toEqual([{ labels: { outcome: 'failed' }, value: 1 }]);
    // The operator's line: who, how many, and notification-service's answer.
    const warnings = logged.map((l) => JSON.parse(l) as { msg: string; userId?: string; keys?: number; err?: string });
    expect(warnings).toContainEqual(
      expect.objectContaining({
        msg: 'read-state check failed: pushing the held notifications anyway',
        userId: 'ryd',
        keys: 1,
        err: expect.stringMatching(/HTTP 401/),
      }),
    );
  } finally {
    await wrong.app.close();
  }
});

it('pushes anyway when the check fails (notification-service down), and counts it', async () => {
  const sub = await h.subscribe(push, 'ryc');
  const event = notificationCreated({ userId: 'ryc', type: 'mention' });
  await ns.stop();
  const before = await h.metric('messaging_succeeded_total');
  await h.publish(event);
  await eventually('handled', async () => (await h.metric('messaging_succeeded_total')) > before);
  expect(await row(event.data.idempotencyKey)).toMatchObject({ state: 'pending', attempts: 0 });

  now = new Date(now.getTime() + DELAY_MS);
  expect(await h.svc.poller.poll()).toBe(1);
  expect(await row(event.data.idempotencyKey)).toMatchObject({ state: 'sent', attempts: 1 });
  expect(push.for(sub)).toHaveLength(1);
  expect(await h.metric('push_read_checks_total', { outcome: 'failed' })).toBe(1);
});
