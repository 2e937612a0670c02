// The retention window never reopens: once a ledger row is purged, a late copy of its event (a DLQ
// replay, a relay back after an outage) is refused as expired instead of sending the email again.
// Real RabbitMQ (own vhost), Postgres (own database), SMTP server; the service's clock is moved
// forward and the rows' timestamps back, as if a month had passed.
import { eventually, type PeekedMessage } from '@community/testing';
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

const DAY = 86_400_000;
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
let offsetMs = 0;

beforeAll(async () => {
  infra = await createInfra('email_retention_replay');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp, { EMAIL_RETENTION_DAYS: '30' }), {
    clock: () => new Date(Date.now() + offsetMs),
  });
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('alice projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
});

afterAll(async () => {
  await s?.svc.stop();
  await smtp?.close();
  await infra?.close();
});

it('records its horizon at start, for the purge that runs in the reconciler', async () => {
  const rows = await s.svc.pool.query('SELECT name, horizon_ms::float8 AS ms, set_by FROM retention_horizons');
  expect(rows.rows).toEqual([{ name: 'email', ms: 30 * DAY, set_by: 'email-service' }]);
});

it('refuses a copy of an event older than the acceptance window after its ledger row was purged: no second email', async () => {
  const event = notificationCreated({ userId: 'alice', actorId: 'bob' });
  const emails = () =>
    smtp.received.filter(
      (m) => m.messageId === messageIdFor('immediate', event.data.idempotencyKey, 'community.local'),
    );
  await s.publish(event);
  await eventually('the email', () => emails().length === 1);
  await eventually(
    'ledger row sent',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_deliveries WHERE state = 'sent'`)).rowCount === 1,
  );

  // 31 days later: the database's rows are that much older, and so is the service's "now".
  await s.svc.pool.query(
    `UPDATE email_deliveries SET created_at = created_at - interval '31 days', updated_at = updated_at - interval '31 days'`,
  );
  offsetMs = 31 * DAY;
  // What the reconciler's email-retention job does to it (apps/reconciler/test/retention.test.ts).
  expect(
    (await s.svc.pool.query(`DELETE FROM email_deliveries WHERE created_at < now() - interval '30 days'`)).rowCount,
  ).toBe(1);

  // The same event again, as a DLQ replay or a late relay would bring it.
  await s.publish(event);
  const taken: PeekedMessage[] = [];
  const dead = await eventually('the late copy dead-lettered', async () => {
    taken.push(...(await infra.vhost.take('email-service.send.dlq', 10)));
    return taken.find((m) => m.properties.message_id === event.id);
  });
  const headers = dead.properties.headers ?? {};
  expect(headers['x-error-kind']).toBe('permanent');
  expect(String(headers['x-error-message'])).toMatch(/beyond the \d+ h acceptance window/);
  expect(emails()).toHaveLength(1);
  expect((await s.svc.pool.query('SELECT 1 FROM email_deliveries')).rowCount).toBe(0);
});
