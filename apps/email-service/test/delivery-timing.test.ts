import { buildEvent } from '@community/contracts';
import { eventually } from '@community/testing';
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
import { TestSmtp } from './support/smtp';

// Quiet hours (docs/EMAIL.md "Delivery timing"), delay-then-check off: an immediate email whose
// notification.created carries quietUntil waits in the ledger until then and the ticker sends it;
// a security alert never waits. Real broker, Postgres and SMTP; time is the service's clock.
let now = new Date();
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
const idFor = (key: string) => messageIdFor('immediate', key, 'community.local');
const emailsFor = (key: string) => smtp.received.filter((m) => m.messageId === idFor(key));

beforeAll(async () => {
  infra = await createInfra('email_timing');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp), { clock: () => now });
  await s.publish(userUpserted('qt-a', 'qt-a@example.test', 'Ana'));
  await s.publish(userUpserted('qt-b', 'qt-b@example.test', 'Budi'));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 2);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

async function row(key: string) {
  const { rows } = await s.svc.pool.query<{ state: string; next: Date | null; held: boolean }>(
    `SELECT state::text, next_attempt_at AS next, held IS NOT NULL AS held FROM email_deliveries WHERE idempotency_key = $1`,
    [key],
  );
  return rows[0];
}

it('an email decided in quiet hours waits in the ledger until they end, then the ticker sends it once', async () => {
  const quietUntil = new Date(now.getTime() + 3_600_000);
  const n = notificationCreated({ userId: 'qt-a', actorId: 'qt-b', quietUntil, excerpt: 'see you at dawn' });
  await s.publishAndWait(n, n);
  expect(await row(n.data.idempotencyKey)).toEqual({ state: 'pending', next: quietUntil, held: true });
  expect(emailsFor(n.data.idempotencyKey)).toHaveLength(0);

  // Half-way through the quiet hours: still nothing.
  now = new Date(quietUntil.getTime() - 1_800_000);
  await s.svc.ticker.tick(now);
  expect(emailsFor(n.data.idempotencyKey)).toHaveLength(0);

  now = new Date(quietUntil.getTime() + 1_000);
  await s.svc.ticker.tick(now);
  await s.svc.ticker.tick(now);
  const mail = await eventually('the held email', async () => emailsFor(n.data.idempotencyKey)[0]);
  expect(mail.subject).toBe('Budi mentioned you in a comment');
  expect(mail.text).toContain('see you at dawn');
  expect((await row(n.data.idempotencyKey)).state).toBe('sent');
  // A late copy of the event after it went out sends nothing more.
  await s.publishAndWait(n);
  await s.svc.ticker.tick(now);
  expect(emailsFor(n.data.idempotencyKey)).toHaveLength(1);
  expect(await s.metric('email_held_total', { reason: 'quiet_hours' })).toBe(1);
});

it('a security alert never waits, whatever quietUntil says', async () => {
  const n = notificationCreated({
    userId: 'qt-a',
    type: 'security_alert',
    quietUntil: new Date(now.getTime() + 3_600_000),
  });
  await s.publish(n);
  await eventually('the alert, without a tick', async () => emailsFor(n.data.idempotencyKey).length === 1);
  expect((await row(n.data.idempotencyKey)).held).toBe(false);
});

it('quietUntil in the past sends at once; a held email withdrawn meanwhile is never sent', async () => {
  const past = notificationCreated({ userId: 'qt-b', quietUntil: new Date(now.getTime() - 60_000) });
  await s.publish(past);
  await eventually('sent at once', async () => emailsFor(past.data.idempotencyKey).length === 1);

  const withdrawnOne = notificationCreated({ userId: 'qt-b', quietUntil: new Date(now.getTime() + 600_000) });
  await s.publishAndWait(withdrawnOne);
  const d = withdrawnOne.data;
  await s.publishAndWait(
    buildEvent(
      'notification.withdrawn',
      {
        notificationId: d.notificationId,
        userId: d.userId,
        type: d.type,
        idempotencyKey: d.idempotencyKey,
        subject: 'comment:c-9',
      },
      { producer: 'notification-service' },
    ),
  );
  now = new Date(now.getTime() + 700_000);
  await s.svc.ticker.tick(now);
  expect(await row(d.idempotencyKey)).toMatchObject({ state: 'suppressed' });
  expect(emailsFor(d.idempotencyKey)).toHaveLength(0);
});
