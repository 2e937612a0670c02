import { eventually } from '@community/testing';
import { messageIdFor } from '../src/message-id';
import { createInfra, notificationCreated, startService, testConfig, userUpserted, type Infra, type StartedService } from './support/harness';
import { TestSmtp } from './support/smtp';

// The critical lane: a security alert published behind a backlog of other email is sent within a
// few sends, under the one provider rate limit. Real broker, database and SMTP server.
const RATE = 10;
const BACKLOG = 50;
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;

beforeAll(async () => {
  infra = await createInfra('email_critical');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp, { SMTP_RATE_PER_SECOND: String(RATE), SMTP_RATE_BURST: '1', EMAIL_CONSUMER_CONCURRENCY: '16' }));
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('user projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it('a security alert overtakes a backlog of other email, sent once, and the rate limit holds for both lanes', async () => {
  const mentions = Array.from({ length: BACKLOG }, () => notificationCreated({ userId: 'alice', type: 'mention', emailChannel: 'immediate', excerpt: 'hi' }));
  for (const m of mentions) await s.publish(m);
  // The backlog is draining at the provider's pace.
  await eventually('backlog draining', () => smtp.received.length >= 3);

  const alert = notificationCreated({ userId: 'alice', type: 'security_alert', emailChannel: 'immediate', excerpt: 'New sign-in from 203.0.113.9' });
  const alertId = messageIdFor('immediate', alert.data.idempotencyKey, 'community.local');
  const before = smtp.received.length;
  await s.publish(alert);
  await eventually('alert received', () => smtp.received.some((m) => m.messageId === alertId));
  const position = smtp.received.findIndex((m) => m.messageId === alertId);
  // Sent before at most 3 more regular emails (those already released by the limiter or on the
  // wire), not behind the ~45 still waiting: about 5 s at this rate.
  expect(position - before).toBeLessThanOrEqual(3);

  // Everything arrives; the alert exactly once although both lanes received it (the regular lane's
  // copy, reached at the end of the backlog, finds the ledger row sent).
  await eventually('backlog delivered', () => smtp.received.length >= BACKLOG + 1, 30_000);
  await eventually('regular copy of the alert acked as a duplicate', async () => (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) >= 1, 10_000);
  expect(smtp.received.filter((m) => m.messageId === alertId)).toHaveLength(1);
  expect(smtp.received).toHaveLength(BACKLOG + 1);
  // The critical lane received the alert and nothing else (the headers exchange passed on only the
  // security_alert notification.created): no copy of the 50 mentions crossed it. (Counted once
  // everything is delivered: the counter moves after the ack, a moment after the SMTP server has it.)
  await eventually('critical lane acked the alert', async () => (await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })) >= 1);
  expect(await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })).toBe(1);
  expect(await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical', outcome: 'processed' })).toBe(1);
  // The ledger marks a row sent after the SMTP server answered: the last row may still be on its way.
  const sentRows = async () => (await s.svc.pool.query(`SELECT count(*)::int AS n FROM email_deliveries WHERE state = 'sent'`)).rows[0].n as number;
  await eventually('every delivery marked sent', async () => (await sentRows()) >= BACKLOG + 1);
  expect(await sentRows()).toBe(BACKLOG + 1);

  // One provider limit for both lanes, seen at the server: a send leaves at its slot or later
  // (a busy event loop fires the limiter's timer late, and its network exchange varies), so RATE + 1
  // consecutive emails span a second less that jitter (150 ms allowed on this shared machine), and
  // the long run keeps the rate. The first RATE are left out: while the pool opens its connections,
  // each new connection's greeting delays the send it carries, and the next ones, on time, arrive
  // bunched behind it (a property of the transport, not of either lane).
  const at = smtp.received.map((m) => m.at).slice(RATE);
  for (let i = 0; i + RATE < at.length; i++) expect(at[i + RATE] - at[i]).toBeGreaterThanOrEqual(850);
  expect(at[at.length - 1] - at[0]).toBeGreaterThanOrEqual(((at.length - 1) * 1000) / RATE - 150);
});

it('a security alert published without the notification-type header (before it existed) is emailed once by the regular lane', async () => {
  const criticalBefore = await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' });
  const sentBefore = smtp.received.length;
  const alert = notificationCreated({ userId: 'alice', type: 'security_alert', emailChannel: 'immediate', excerpt: 'Password changed' });
  const alertId = messageIdFor('immediate', alert.data.idempotencyKey, 'community.local');
  await s.publishWithoutHeaders(alert);
  await eventually('legacy alert received', () => smtp.received.some((m) => m.messageId === alertId), 20_000);
  await eventually('regular lane processed it', async () => (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'processed' })) >= 1);
  expect(smtp.received.filter((m) => m.messageId === alertId)).toHaveLength(1);
  expect(smtp.received.length - sentBefore).toBe(1);
  expect(await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })).toBe(criticalBefore);
});
