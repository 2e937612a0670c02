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

// The critical lane: a security alert published behind a backlog of other email is sent ahead of
// it, under the one provider rate limit. Real broker, database and SMTP server. The rate limiter
// runs on a clock this test moves by hand, one slot (1000 / RATE ms) at a time: with burst 1 its
// token arithmetic grants exactly one send per slot, whoever asks, so every property below is a
// count or an order, never a measured time (a loaded machine only makes it slower).
const RATE = 10;
const SLOT_MS = 1000 / RATE;
const BACKLOG = 50;
const CONCURRENCY = 16;
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
let clockMs = 0;

const permits = (priority?: 'critical' | 'regular') =>
  s.metric('email_rate_limit_permits_total', priority ? { priority } : {});
const waiting = (priority?: 'critical' | 'regular') =>
  s.metric('email_rate_limit_waiting', priority ? { priority } : {});

/** One slot of the limiter's clock: exactly one waiting send is let through, no more. */
async function nextSlot(): Promise<void> {
  const before = await permits();
  await eventually('a send waiting for the slot', async () => (await waiting()) > 0);
  clockMs += SLOT_MS;
  await eventually('the slot granted', async () => (await permits()) > before);
  expect(await permits()).toBe(before + 1);
}

/** Grants slots one by one until `done`; each slot grants exactly one send (nextSlot checks). */
async function slotsUntil(what: string, done: () => Promise<boolean> | boolean, maxSlots: number): Promise<number> {
  let slots = 0;
  for (;;) {
    // Either done, or some send is waiting for the next slot (its handler reached the limiter).
    await eventually(what, async () => (await done()) || (await waiting()) > 0, 30_000);
    if (await done()) return slots;
    if (++slots > maxSlots) throw new Error(`${what}: not done after ${maxSlots} slots`);
    await nextSlot();
    // Nothing reaches the server except through the limiter: never more emails than permits.
    expect(smtp.received.length).toBeLessThanOrEqual(await permits());
  }
}

beforeAll(async () => {
  infra = await createInfra('email_critical');
  smtp = await new TestSmtp().start();
  s = await startService(
    testConfig(infra, smtp, {
      SMTP_RATE_PER_SECOND: String(RATE),
      SMTP_RATE_BURST: '1',
      EMAIL_CONSUMER_CONCURRENCY: String(CONCURRENCY),
    }),
    {
      rateLimitClock: () => clockMs,
    },
  );
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
  const mentions = Array.from({ length: BACKLOG }, () =>
    notificationCreated({ userId: 'alice', type: 'mention', emailChannel: 'immediate', excerpt: 'hi' }),
  );
  for (const m of mentions) await s.publish(m);
  // The clock stands at 0: the idle limiter lets one send through (burst 1) and every other regular
  // handler in flight (prefetch = concurrency) queues behind it; the rest stays in the broker.
  await eventually('backlog queued at the limiter', async () => (await waiting('regular')) >= CONCURRENCY - 1);
  await eventually('first email received', () => smtp.received.length >= 1);
  expect(await permits()).toBe(1);
  expect(smtp.received).toHaveLength(1);

  const alert = notificationCreated({
    userId: 'alice',
    type: 'security_alert',
    emailChannel: 'immediate',
    excerpt: 'New sign-in from 203.0.113.9',
  });
  const alertId = messageIdFor('immediate', alert.data.idempotencyKey, 'community.local');
  await s.publish(alert);
  // The critical lane's consumer took it past the ~50 queued on email-service.send, to the limiter.
  await eventually('alert waiting at the limiter', async () => (await waiting('critical')) === 1);
  const regularAhead = await waiting('regular');
  expect(regularAhead).toBeGreaterThanOrEqual(CONCURRENCY - 1);

  // The next slot goes to the alert, ahead of every regular send that was queued before it.
  await nextSlot();
  expect(await permits('critical')).toBe(1);
  await eventually('alert received', () => smtp.received.some((m) => m.messageId === alertId));
  expect(smtp.received.map((m) => m.messageId === alertId)).toEqual([false, true]);
  expect(await waiting('regular')).toBeGreaterThanOrEqual(regularAhead);

  // The rest of the backlog, one send per slot: the alert used up a slot of the one shared limit
  // (BACKLOG + 1 emails take exactly BACKLOG + 1 permits, nextSlot checks one per slot).
  const slots = await slotsUntil('backlog delivered', () => smtp.received.length >= BACKLOG + 1, BACKLOG * 2);
  expect(slots).toBe(BACKLOG - 1);
  expect(await permits()).toBe(BACKLOG + 1);
  expect(await permits('regular')).toBe(BACKLOG);

  // Everything arrived; the alert exactly once although both lanes received it (the regular lane's
  // copy, reached at the end of the backlog, finds the ledger row sent: no permit, no email).
  await eventually(
    'regular copy of the alert acked as a duplicate',
    async () =>
      (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) >= 1,
    20_000,
  );
  expect(smtp.received.filter((m) => m.messageId === alertId)).toHaveLength(1);
  expect(smtp.received).toHaveLength(BACKLOG + 1);
  expect(await permits()).toBe(BACKLOG + 1);
  // The critical lane received the alert and nothing else (the headers exchange passed on only the
  // security_alert notification.created): no copy of the 50 mentions crossed it. (Counted once
  // everything is delivered: the counter moves after the ack, a moment after the SMTP server has it.)
  await eventually(
    'critical lane acked the alert',
    async () => (await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })) >= 1,
  );
  expect(await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })).toBe(1);
  expect(
    await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical', outcome: 'processed' }),
  ).toBe(1);
  // The ledger marks a row sent after the SMTP server answered: the last row may still be on its way.
  const sentRows = async () =>
    (await s.svc.pool.query(`SELECT count(*)::int AS n FROM email_deliveries WHERE state = 'sent'`)).rows[0]
      .n as number;
  await eventually('every delivery marked sent', async () => (await sentRows()) >= BACKLOG + 1);
  expect(await sentRows()).toBe(BACKLOG + 1);
});

it('a security alert published without the notification-type header (before it existed) is emailed once by the regular lane', async () => {
  // Its own recipient: the count below is this alert's, whatever the first case left behind.
  await s.publish(userUpserted('carol', 'carol@example.test', 'Carol'));
  await eventually(
    'carol projected',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE user_id = 'carol'`)).rowCount === 1,
  );
  const criticalBefore = await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' });
  const processedBefore = await s.metric('messaging_succeeded_total', {
    queue: 'email-service.send',
    outcome: 'processed',
  });
  const alert = notificationCreated({
    userId: 'carol',
    type: 'security_alert',
    emailChannel: 'immediate',
    excerpt: 'Password changed',
  });
  const alertId = messageIdFor('immediate', alert.data.idempotencyKey, 'community.local');
  await s.publishWithoutHeaders(alert);
  await slotsUntil('legacy alert received', () => smtp.received.some((m) => m.messageId === alertId), BACKLOG * 2);
  await eventually(
    'regular lane processed it',
    async () =>
      (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'processed' })) >=
      processedBefore + 1,
  );
  const { rows } = await s.svc.pool.query(`SELECT state, attempts FROM email_deliveries WHERE idempotency_key = $1`, [
    alert.data.idempotencyKey,
  ]);
  expect(rows).toEqual([{ state: 'sent', attempts: 1 }]);
  expect(smtp.received.filter((m) => m.messageId === alertId)).toHaveLength(1);
  expect(smtp.received.filter((m) => m.rcptTo.includes('carol@example.test'))).toHaveLength(1);
  expect(await s.metric('messaging_succeeded_total', { queue: 'email-service.send-critical' })).toBe(criticalBefore);
});
