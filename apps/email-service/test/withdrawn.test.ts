import { buildEvent, type EventOf } from '@community/contracts';
import { eventually } from '@community/testing';
import { messageIdFor } from '../src/message-id';
import { digestKey, windowFor } from '../src/domain/digest-window';
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

// notification.withdrawn (docs/EMAIL.md "Withdrawn notifications") against the real broker,
// Postgres and an SMTP server: what has not gone out yet never does, in either arrival order.
const today = windowFor(new Date(), 'daily');
const clock = new Date(today.start.getTime() + 12 * 3_600_000);
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;

beforeAll(async () => {
  infra = await createInfra('email_withdrawn');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp), { clock: () => clock });
  for (const u of ['wd-a', 'wd-b', 'wd-c']) await s.publish(userUpserted(u, `${u}@example.test`, u));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 3);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

function withdrawn(
  created: EventOf<'notification.created'>,
  subject = 'comment:c-1',
): EventOf<'notification.withdrawn'> {
  const d = created.data;
  return buildEvent(
    'notification.withdrawn',
    { notificationId: d.notificationId, userId: d.userId, type: d.type, idempotencyKey: d.idempotencyKey, subject },
    { producer: 'notification-service' },
  );
}

it('a digest leaves out the withdrawn item and keeps the others', async () => {
  const kept = notificationCreated({ userId: 'wd-a', type: 'follow', emailChannel: 'digest', excerpt: 'kept-one' });
  const gone = notificationCreated({ userId: 'wd-a', type: 'reaction', emailChannel: 'digest', excerpt: 'gone-one' });
  await s.publishAndWait(kept, gone);
  await s.publishAndWait(withdrawn(gone));

  await s.svc.ticker.tick(new Date(today.end.getTime() + 60_000));
  const id = messageIdFor('digest', digestKey('wd-a', today.start), 'community.local');
  const mail = await eventually('the digest', async () => smtp.received.find((m) => m.messageId === id));
  expect(mail.text).toContain('kept-one');
  expect(mail.text).not.toContain('gone-one');
});

it('a digest whose every item was withdrawn is not sent at all', async () => {
  const gone = notificationCreated({ userId: 'wd-b', type: 'follow', emailChannel: 'digest' });
  await s.publishAndWait(gone, withdrawn(gone));
  await s.svc.ticker.tick(new Date(today.end.getTime() + 60_000));
  const { rows } = await s.svc.pool.query(`SELECT status::text FROM email_digest_windows WHERE user_id = 'wd-b'`);
  expect(rows).toEqual([{ status: 'empty' }]);
  const id = messageIdFor('digest', digestKey('wd-b', today.start), 'community.local');
  expect(smtp.received.find((m) => m.messageId === id)).toBeUndefined();
});

it('a withdrawal that arrives before its notification.created: no email; the next notification is emailed', async () => {
  const gone = notificationCreated({ userId: 'wd-c', type: 'mention', emailChannel: 'immediate' });
  await s.publishAndWait(withdrawn(gone));
  await s.publishAndWait(gone);
  const next = notificationCreated({ userId: 'wd-c', type: 'mention', emailChannel: 'immediate' });
  await s.publishAndWait(next);
  await eventually('the next email', async () =>
    smtp.received.some((m) => m.messageId === messageIdFor('immediate', next.data.idempotencyKey, 'community.local')),
  );
  expect(
    smtp.received.filter((m) => m.messageId === messageIdFor('immediate', gone.data.idempotencyKey, 'community.local')),
  ).toEqual([]);
  const { rows } = await s.svc.pool.query(`SELECT 1 FROM email_deliveries WHERE idempotency_key = $1`, [
    gone.data.idempotencyKey,
  ]);
  expect(rows).toEqual([]);
});

it('an immediate email still waiting for a retry is suppressed, with the reason in the ledger', async () => {
  // A row as a failed first attempt leaves it: pending, its next attempt later.
  const created = notificationCreated({ userId: 'wd-c', type: 'reply', emailChannel: 'immediate' });
  const key = created.data.idempotencyKey;
  await s.svc.pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, state, attempts, next_attempt_at)
     VALUES ($1, 'immediate', 'wd-c', $2, 'pending', 1, now() + interval '1 hour')`,
    [key, messageIdFor('immediate', key, 'community.local')],
  );
  await s.publishAndWait(withdrawn(created, 'post:p-9'));
  const { rows } = await s.svc.pool.query(
    `SELECT state::text, last_error FROM email_deliveries WHERE idempotency_key = $1`,
    [key],
  );
  expect(rows).toEqual([{ state: 'suppressed', last_error: 'withdrawn: post:p-9' }]);
});
