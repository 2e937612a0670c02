import { eventually } from '@community/testing';
import { READ_IN_APP_REASON } from '../src/delivery/held';
import { messageIdFor } from '../src/message-id';
import {
  createInfra,
  notificationCreated,
  startService,
  testConfig,
  userUpserted,
  type Infra,
  type StartedService,
} from './support/harness';
import { ReadStateServer } from './support/read-state-server';
import { TestSmtp } from './support/smtp';

// Delay-then-check (docs/EMAIL.md "Delivery timing") with EMAIL_READ_CHECK_DELAY_MS = 2 min: a
// non-critical immediate email waits, then goes out only if notification-service's read state
// (here a stand-in that verifies email-service's service token) says it is unread; a failed check
// sends anyway. Real broker, Postgres and SMTP; time is the service's clock, never waited for.
const DELAY_MS = 120_000;
let now = new Date();
let infra: Infra;
let smtp: TestSmtp;
let readState: ReadStateServer;
let s: StartedService;
const idFor = (key: string) => messageIdFor('immediate', key, 'community.local');
const emailsFor = (key: string) => smtp.received.filter((m) => m.messageId === idFor(key));

beforeAll(async () => {
  infra = await createInfra('email_readcheck');
  smtp = await new TestSmtp().start();
  readState = await new ReadStateServer().start();
  const config = testConfig(infra, smtp, {
    EMAIL_READ_CHECK_DELAY_MS: String(DELAY_MS),
    EMAIL_READ_CHECK_TIMEOUT_MS: '300',
    NOTIFICATION_SERVICE_URL: readState.url,
  });
  s = await startService(config, { clock: () => now });
  for (const u of ['rc-a', 'rc-b', 'rc-c']) await s.publish(userUpserted(u, `${u}@example.test`, u));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 3);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await readState?.close();
  await smtp?.close();
  await infra?.close();
});

async function ledgerRow(key: string) {
  const { rows } = await s.svc.pool.query<{ state: string; reason: string | null; next: Date | null }>(
    `SELECT state::text, last_error AS reason, next_attempt_at AS next FROM email_deliveries WHERE idempotency_key = $1`,
    [key],
  );
  return rows[0];
}

it('holds for the delay, asks once per user, sends the unread ones and records the read one as not sent', async () => {
  const received = now;
  const [one, two, three] = [1, 2, 3].map(() => notificationCreated({ userId: 'rc-a', type: 'reply' }));
  const other = notificationCreated({ userId: 'rc-b', type: 'comment' });
  await s.publishAndWait(one, two, three, other);
  for (const n of [one, two, three, other])
    expect(await ledgerRow(n.data.idempotencyKey)).toMatchObject({
      state: 'pending',
      next: new Date(received.getTime() + DELAY_MS),
    });

  // The user reads one in the inbox meanwhile.
  readState.read.add(two.data.idempotencyKey);
  now = new Date(received.getTime() + DELAY_MS / 2);
  await s.svc.ticker.tick(now);
  expect(readState.requests).toHaveLength(0);
  expect(smtp.received).toHaveLength(0);

  now = new Date(received.getTime() + DELAY_MS + 1_000);
  await s.svc.ticker.tick(now);
  await eventually('the unread emails', async () => smtp.received.length === 3);
  expect(emailsFor(one.data.idempotencyKey)).toHaveLength(1);
  expect(emailsFor(three.data.idempotencyKey)).toHaveLength(1);
  expect(emailsFor(other.data.idempotencyKey)).toHaveLength(1);
  expect(emailsFor(two.data.idempotencyKey)).toHaveLength(0);
  expect(await ledgerRow(two.data.idempotencyKey)).toMatchObject({ state: 'suppressed', reason: READ_IN_APP_REASON });
  expect((await ledgerRow(one.data.idempotencyKey)).state).toBe('sent');
  // One call per user, with all of that user's due keys.
  expect(readState.rejected).toBe(0);
  expect(readState.requests).toHaveLength(2);
  expect(readState.requests.find((r) => r.userId === 'rc-a')?.idempotencyKeys.sort()).toEqual(
    [one, two, three].map((n) => n.data.idempotencyKey).sort(),
  );
  expect(await s.metric('email_read_checks_total', { outcome: 'read' })).toBe(1);
  expect(await s.metric('email_read_checks_total', { outcome: 'unread' })).toBe(3);

  // Redelivered after the fact: nothing more goes out, and the read one stays unsent.
  await s.publishAndWait(two, one);
  now = new Date(now.getTime() + 2 * DELAY_MS);
  await s.svc.ticker.tick(now);
  expect(smtp.received).toHaveLength(3);
});

it('a check that fails (5xx) or times out sends the email anyway, and counts it', async () => {
  readState.requests.length = 0;
  readState.mode = 'down';
  const down = notificationCreated({ userId: 'rc-c', type: 'mention' });
  await s.publishAndWait(down);
  readState.read.add(down.data.idempotencyKey);
  now = new Date(now.getTime() + DELAY_MS + 1_000);
  await s.svc.ticker.tick(now);
  await eventually('sent despite the failed check', async () => emailsFor(down.data.idempotencyKey).length === 1);
  expect((await ledgerRow(down.data.idempotencyKey)).state).toBe('sent');

  readState.mode = 'hang';
  const hung = notificationCreated({ userId: 'rc-c', type: 'mention' });
  await s.publishAndWait(hung);
  readState.read.add(hung.data.idempotencyKey);
  now = new Date(now.getTime() + DELAY_MS + 1_000);
  await s.svc.ticker.tick(now);
  await eventually('sent despite the timeout', async () => emailsFor(hung.data.idempotencyKey).length === 1);
  expect(readState.requests).toHaveLength(2);
  expect(await s.metric('email_read_checks_total', { outcome: 'failed' })).toBe(2);
  readState.mode = 'up';
});

it('waits for quiet hours longer than the delay; a security alert waits for neither and is never checked', async () => {
  readState.requests.length = 0;
  const quietUntil = new Date(now.getTime() + 3_600_000);
  const quiet = notificationCreated({ userId: 'rc-b', type: 'follow', quietUntil });
  await s.publishAndWait(quiet);
  expect((await ledgerRow(quiet.data.idempotencyKey)).next).toEqual(quietUntil);
  now = new Date(now.getTime() + DELAY_MS + 1_000);
  await s.svc.ticker.tick(now);
  expect(emailsFor(quiet.data.idempotencyKey)).toHaveLength(0);
  now = new Date(quietUntil.getTime() + 1_000);
  await s.svc.ticker.tick(now);
  await eventually('sent after the quiet hours', async () => emailsFor(quiet.data.idempotencyKey).length === 1);

  const alert = notificationCreated({ userId: 'rc-b', type: 'security_alert' });
  await s.publish(alert);
  await eventually('the alert, at once', async () => emailsFor(alert.data.idempotencyKey).length === 1);
  expect(readState.requests.flatMap((r) => r.idempotencyKeys)).not.toContain(alert.data.idempotencyKey);
});
