import { randomUUID } from 'node:crypto';
import { buildEvent } from '@community/contracts';
import { userTokenSigner } from '@community/service';
import { eventually, startAppProcess, testOperators, type AppProcess } from '@community/testing';
import { READ_IN_APP_REASON } from '../src/delivery/held';
import { messageIdFor } from '../src/message-id';
import {
  createInfra,
  startService,
  testConfig,
  userUpserted,
  type Infra,
  type StartedService,
} from './support/harness';
import { TestSmtp } from './support/smtp';

// Delay-then-check (docs/EMAIL.md "Delivery timing") against the REAL notification-service, a
// process of its own on the same database and vhost: a mention goes through it (user.mentioned →
// the inbox → notification.created), email-service holds the email for the delay, the user reads
// one in the app meanwhile, and when it is due email-service asks notification-service (a signed
// POST /v1/internal/read-state, email-service's development key pair on both sides) and does not
// send it. Then notification-service is stopped: the check fails and the email goes out anyway.
// email-service's clock is the test's; ticks are driven by hand.
const DELAY_MS = 120_000;
const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
const userToken = userTokenSigner({
  secret: JWT_SECRET,
  issuer: 'community-site',
  audience: 'community-notifications',
});
let now = new Date();
let infra: Infra;
let smtp: TestSmtp;
let ns: AppProcess;
let s: StartedService;
const emailsFor = (key: string) =>
  smtp.received.filter((m) => m.messageId === messageIdFor('immediate', key, 'community.local'));

beforeAll(async () => {
  infra = await createInfra('email_readcheck_ns');
  smtp = await new TestSmtp().start();
  ns = await startAppProcess('notification-service', {
    DATABASE_URL: infra.db.url,
    AMQP_URL: infra.vhost.url,
    JWT_SECRET,
    ADMIN_KEYS: testOperators().adminKeys,
    SHUTDOWN_TIMEOUT_MS: '3000',
  });
  const config = testConfig(infra, smtp, {
    EMAIL_READ_CHECK_DELAY_MS: String(DELAY_MS),
    NOTIFICATION_SERVICE_URL: ns.url,
  });
  s = await startService(config, { clock: () => now });
  for (const u of ['rn-a', 'rn-b', 'bob']) await s.publish(userUpserted(u, `${u}@example.test`, u));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 3);
}, 120_000);

afterAll(async () => {
  await ns?.stop();
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

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

async function heldRow(key: string): Promise<{ state: string; notification_id: string; next: Date }> {
  return eventually(`the email of ${key} held`, async () => {
    const { rows } = await s.svc.pool.query(
      `SELECT state::text, notification_id, next_attempt_at AS next FROM email_deliveries WHERE idempotency_key = $1`,
      [key],
    );
    return rows[0]?.state === 'pending' ? rows[0] : undefined;
  });
}

async function readInApp(userId: string, notificationId: string): Promise<void> {
  const res = await fetch(`${ns.url}/v1/users/${userId}/notifications/${notificationId}/read`, {
    method: 'POST',
    headers: { authorization: `Bearer ${userToken(userId)}` },
  });
  expect(res.status).toBe(200);
}

it('read in the app during the delay: not emailed, the ledger says why; unread: emailed', async () => {
  const read = mentioned('rn-a');
  const unread = mentioned('rn-a');
  await s.svc.messaging.publisher.publish(read.event);
  await s.svc.messaging.publisher.publish(unread.event);
  const readRow = await heldRow(read.key);
  await heldRow(unread.key);
  expect(readRow.next.getTime()).toBeGreaterThan(now.getTime());
  await s.svc.ticker.tick(now);
  expect(smtp.received).toHaveLength(0);

  await readInApp('rn-a', readRow.notification_id);
  now = new Date(now.getTime() + DELAY_MS + 1_000);
  await s.svc.ticker.tick(now);

  await eventually('the unread one emailed', async () => emailsFor(unread.key).length === 1);
  expect(emailsFor(read.key)).toHaveLength(0);
  const { rows } = await s.svc.pool.query(
    `SELECT idempotency_key AS key, state::text, last_error FROM email_deliveries WHERE user_id = 'rn-a' ORDER BY state`,
  );
  expect(rows).toEqual(
    expect.arrayContaining([
      { key: read.key, state: 'suppressed', last_error: READ_IN_APP_REASON },
      { key: unread.key, state: 'sent', last_error: null },
    ]),
  );
  expect(await s.metric('email_read_checks_total', { outcome: 'read' })).toBe(1);
  expect(await s.metric('email_read_checks_total', { outcome: 'unread' })).toBe(1);
});

it('notification-service down when the email is due: sent anyway, and counted', async () => {
  const m = mentioned('rn-b');
  await s.svc.messaging.publisher.publish(m.event);
  const row = await heldRow(m.key);
  await ns.stop();
  now = new Date(row.next.getTime() + 1_000);
  await s.svc.ticker.tick(now);
  await eventually('emailed despite the failed check', async () => emailsFor(m.key).length === 1);
  expect(await s.metric('email_read_checks_total', { outcome: 'failed' })).toBe(1);
});
