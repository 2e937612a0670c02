import amqplib from 'amqplib';
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
import { smtpError, TestSmtp } from './support/smtp';

// Immediate emails end to end: real RabbitMQ (own vhost), Postgres (own database), SMTP server.
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
const dlq: PeekedMessage[] = [];

const idFor = (key: string) => messageIdFor('immediate', key, 'community.local');
const emailsFor = (key: string) => smtp.received.filter((m) => m.messageId === idFor(key));
const ledgerRow = async (key: string) =>
  (await s.svc.pool.query(`SELECT state, attempts, last_error FROM email_deliveries WHERE idempotency_key = $1`, [key]))
    .rows[0] as { state: string; attempts: number; last_error: string | null } | undefined;
async function dlqFor(eventId: string): Promise<PeekedMessage | undefined> {
  dlq.push(...(await infra.vhost.take('email-service.send.dlq', 50)));
  return dlq.find((m) => m.properties.message_id === eventId);
}
/** The server has the message before the ledger says 'sent' (one UPDATE later): wait for both. */
const ledgerSettles = (key: string, state: string) =>
  eventually(`ledger row ${state}`, async () => {
    const row = await ledgerRow(key);
    return row?.state === state ? row : undefined;
  });

beforeAll(async () => {
  infra = await createInfra('email_delivery');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp, { USER_ADDRESS_GRACE_MS: '1000', EMAIL_CONSUMER_CONCURRENCY: '16' }));
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await s.publish(userUpserted('bob', 'bob@example.test', 'Bob'));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 2);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it('sends exactly one email per idempotency key under duplicate and concurrent deliveries', async () => {
  const event = notificationCreated({ userId: 'alice', actorId: 'bob', excerpt: 'hi @alice' });
  const sameKeyNewId = notificationCreated({
    userId: 'alice',
    actorId: 'bob',
    idempotencyKey: event.data.idempotencyKey,
    notificationId: event.data.notificationId,
  });
  await Promise.all([s.publish(event), s.publish(event), s.publish(event), s.publish(sameKeyNewId)]);

  await eventually('the email', () => emailsFor(event.data.idempotencyKey).length === 1);
  // Once the three others are acked as duplicates, no delivery of this key is left running: a
  // second email could only have come from one of them.
  await eventually(
    'all four deliveries handled',
    async () =>
      (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) >= 3,
  );
  expect(emailsFor(event.data.idempotencyKey)).toHaveLength(1);
  expect(await ledgerSettles(event.data.idempotencyKey, 'sent')).toMatchObject({ attempts: 1 });

  // A redelivery long after the send is acked without a second email.
  await s.publish(event);
  await eventually(
    'redelivery handled',
    async () =>
      (await s.metric('messaging_succeeded_total', { queue: 'email-service.send', outcome: 'duplicate' })) >= 4,
  );
  expect(emailsFor(event.data.idempotencyKey)).toHaveLength(1);
});

it('neutralises CR/LF and <script> in names and excerpts; links and List-Unsubscribe headers are set', async () => {
  await s.publish(userUpserted('mallory', 'mallory@example.test', 'Mallory\r\nBcc: victim@evil.test'));
  await s.publish(userUpserted('eve', 'eve@example.test', 'Eve <script>alert(1)</script>\r\nX-Injected: yes'));
  await eventually(
    'users projected',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE user_id IN ('mallory','eve')`)).rowCount === 2,
  );
  const event = notificationCreated({
    userId: 'mallory',
    actorId: 'eve',
    excerpt: 'look <script>steal()</script> & "quotes"\r\nBcc: other@evil.test',
  });
  await s.publish(event);
  const [mail] = await eventually('the email', () =>
    emailsFor(event.data.idempotencyKey).length ? emailsFor(event.data.idempotencyKey) : undefined,
  );

  expect(mail.rcptTo).toEqual(['mallory@example.test']);
  expect(mail.headerLines.filter((l) => /^(bcc|x-injected):/i.test(l))).toEqual([]);
  expect(mail.subject).toBe('Eve <script>alert(1)</script> X-Injected: yes mentioned you in a comment');
  expect(mail.to).toContain('Mallory Bcc: victim@evil.test');
  expect(mail.html).not.toContain('<script>');
  expect(mail.html).toContain('Eve &lt;script&gt;alert(1)&lt;/script&gt;');
  expect(mail.html).toContain(
    'look &lt;script&gt;steal()&lt;/script&gt; &amp; &quot;quotes&quot;<br>Bcc: other@evil.test',
  );
  expect(mail.text).toContain(`http://127.0.0.1:3000/notifications/${event.data.notificationId}`);
  expect(mail.html).toContain(`href="http://127.0.0.1:3000/notifications/${event.data.notificationId}"`);
  expect(mail.headers.get('list-unsubscribe')).toMatch(/^<http:\/\/127\.0\.0\.1:3002\/v1\/unsubscribe\?token=[^>]+>$/);
  expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
});

it('keeps the newest user.upserted: a stale update, handled after it, does not overwrite it', async () => {
  const carol = async () =>
    (await s.svc.pool.query(`SELECT email, display_name FROM email_users WHERE user_id = 'carol'`)).rows;
  const staleRefused = () =>
    s.metric('messaging_succeeded_total', { queue: 'email-service.users', outcome: 'duplicate' });
  const t = Date.now();
  // One at a time, so the order in which they are handled is the order under test (consumed
  // concurrently, the stale one could be handled first, and then there is nothing to refuse).
  await s.publish(userUpserted('carol', 'carol-new@example.test', 'Carol New', new Date(t)));
  await eventually('the newer update is projected', async () => (await carol()).length === 1);
  const refusedBefore = await staleRefused();
  await s.publish(userUpserted('carol', 'carol-old@example.test', 'Carol Old', new Date(t - 60_000)));
  await eventually(
    'the stale update is handled, as a duplicate',
    async () => (await staleRefused()) === refusedBefore + 1,
  );
  expect(await carol()).toEqual([{ email: 'carol-new@example.test', display_name: 'Carol New' }]);
});

it('delivers after a retry when the server answers 4xx', async () => {
  await s.publish(userUpserted('dave', 'dave@example.test', 'Dave'));
  let refusals = 0;
  smtp.behaviour.onRcpt = (address) =>
    address === 'dave@example.test' && refusals++ === 0
      ? smtpError(451, '4.7.1 Greylisted, try again later')
      : undefined;
  const event = notificationCreated({ userId: 'dave', actorId: 'bob' });
  await eventually(
    'dave projected',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE user_id = 'dave'`)).rowCount === 1,
  );
  await s.publish(event);
  await eventually('delivered after the retry', () => emailsFor(event.data.idempotencyKey).length === 1);
  expect(refusals).toBe(2);
  expect(await ledgerSettles(event.data.idempotencyKey, 'sent')).toMatchObject({ attempts: 2 });
  expect(await s.metric('messaging_retried_total', { queue: 'email-service.send' })).toBeGreaterThanOrEqual(1);
  smtp.behaviour = {};
});

it('dead-letters a 5xx at once with the server reply, and records the row as failed', async () => {
  await s.publish(userUpserted('erin', 'erin@example.test', 'Erin'));
  smtp.behaviour.onRcpt = (address) =>
    address === 'erin@example.test' ? smtpError(550, '5.1.1 <erin@example.test>: mailbox does not exist') : undefined;
  await eventually(
    'erin projected',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE user_id = 'erin'`)).rowCount === 1,
  );
  const event = notificationCreated({ userId: 'erin', actorId: 'bob' });
  await s.publish(event);
  const dead = await eventually('dead-lettered', () => dlqFor(event.id));
  const headers = dead.properties.headers ?? {};
  expect(headers['x-error-class']).toBe('SmtpPermanentError');
  expect(headers['x-error-message']).toContain('550');
  expect(headers['x-error-message']).toContain('mailbox does not exist');
  expect(headers['x-error-kind']).toBe('permanent');
  expect(headers['x-attempts']).toBe(1);
  expect(await ledgerSettles(event.data.idempotencyKey, 'failed')).toMatchObject({ attempts: 1 });
  expect(emailsFor(event.data.idempotencyKey)).toHaveLength(0);
  smtp.behaviour = {};
});

it('dead-letters malformed messages with the reason', async () => {
  const conn = await amqplib.connect(infra.vhost.url);
  const ch = await conn.createConfirmChannel();
  ch.publish('', 'email-service.send', Buffer.from('{not json'), {
    messageId: 'bad-json',
    type: 'notification.created',
  });
  const missing = notificationCreated({ userId: 'alice' }) as unknown as { data: Record<string, unknown> };
  delete missing.data.idempotencyKey;
  ch.publish('', 'email-service.send', Buffer.from(JSON.stringify(missing)), {
    messageId: 'missing-key',
    type: 'notification.created',
  });
  await ch.waitForConfirms();
  await conn.close();

  const badJson = await eventually('bad json dead-lettered', () => dlqFor('bad-json'));
  expect(badJson.properties.headers?.['x-error-class']).toBe('ContractError');
  expect(String(badJson.properties.headers?.['x-error-message'])).toContain('not valid JSON');
  const noKey = await eventually('missing field dead-lettered', () => dlqFor('missing-key'));
  expect(String(noKey.properties.headers?.['x-error-message'])).toContain('/data/idempotencyKey');
});

it('waits for a late address within the grace period, then records "no address" as a failed row, not a crash', async () => {
  const late = notificationCreated({ userId: 'frank' });
  const retriedBefore = await s.metric('messaging_retried_total', { queue: 'email-service.send' });
  await s.publish(late);
  // The address arrives only after a first attempt found none and sent the message to a retry tier.
  await eventually(
    'first attempt found no address',
    async () => (await s.metric('messaging_retried_total', { queue: 'email-service.send' })) > retriedBefore,
  );
  expect(emailsFor(late.data.idempotencyKey)).toHaveLength(0);
  await s.publish(userUpserted('frank', 'frank@example.test', 'Frank'));
  await eventually('delivered once the address arrived', () => emailsFor(late.data.idempotencyKey).length === 1);

  const never = notificationCreated({ userId: 'ghost' });
  await s.publish(never);
  const row = await ledgerSettles(never.data.idempotencyKey, 'failed');
  expect(row.last_error).toMatch(/^no_address: no user.upserted for user ghost within the 1 s grace period/);
  expect(await dlqFor(never.id)).toBeUndefined();
  expect(await s.metric('email_undeliverable_total', { reason: 'unknown_user' })).toBe(1);
});

it('follows emailChannel "off", but always sends security alerts, without an unsubscribe link', async () => {
  const off = notificationCreated({ userId: 'alice', actorId: 'bob', emailChannel: 'off' });
  const alert = notificationCreated({
    userId: 'alice',
    type: 'security_alert',
    emailChannel: 'off',
    excerpt: 'New sign-in from 203.0.113.9',
  });
  await s.publish(off);
  await s.publish(alert);
  const [mail] = await eventually('the alert', () =>
    emailsFor(alert.data.idempotencyKey).length ? emailsFor(alert.data.idempotencyKey) : undefined,
  );
  expect(mail.subject).toBe('Security alert on your account');
  expect(mail.text).toContain('New sign-in from 203.0.113.9');
  expect(mail.headers.has('list-unsubscribe')).toBe(false);
  await eventually('off handled', async () => (await s.metric('email_decisions_total', { decision: 'off' })) === 1);
  expect(emailsFor(off.data.idempotencyKey)).toHaveLength(0);
  expect(await ledgerRow(off.data.idempotencyKey)).toBeUndefined();
});

it('reports readiness with the breaker state in the details, and metrics', async () => {
  const ready = await s.svc.app.inject({ method: 'GET', url: '/readyz' });
  expect(ready.statusCode).toBe(200);
  expect(ready.json()).toMatchObject({
    status: 'ready',
    checks: { accepting: true, amqp: true, consumers: true, database: true },
    details: { smtpBreaker: { state: 'closed' }, emailQueue: 'consuming' },
  });
  const metrics = await s.svc.app.inject({ method: 'GET', url: '/metrics' });
  expect(metrics.body).toContain('email_smtp_breaker_open');
  expect(metrics.body).toContain('email_sends_total');
});
