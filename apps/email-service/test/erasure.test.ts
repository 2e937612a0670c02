// user.erased in email-service (docs/RUNBOOK.md "Erasure"), against the real broker, database and
// an SMTP server: a delivery still pending for the erased user is never sent, the user's open
// digest is gone while another user's digest is sent without the erased actor, and a redelivery of
// the erasure has no second effect.
import { buildEvent, type EventOf } from '@community/contracts';
import { eventually } from '@community/testing';
import { windowFor } from '../src/domain/digest-window';
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

const today = windowFor(new Date(), 'daily');
let now = new Date(today.start.getTime() + 12 * 3_600_000);
let infra: Infra;
let smtp: TestSmtp;
let es: StartedService;

const rows = async (sql: string, values: unknown[] = []) => (await es.svc.pool.query(sql, values)).rows;
const erased = (userId: string): EventOf<'user.erased'> =>
  buildEvent('user.erased', { userId, erasureId: '7' }, { producer: 'reconciler' });

beforeAll(async () => {
  infra = await createInfra('email_erasure');
  smtp = await new TestSmtp().start();
  es = await startService(testConfig(infra, smtp), { clock: () => now });
  await es.publish(userUpserted('ada', 'ada@example.test', 'Ada'));
  await es.publish(userUpserted('bob', 'bob@example.test', 'Bob'));
  await eventually('users projected', async () => (await rows('SELECT 1 FROM email_users')).length === 2);
});

afterAll(async () => {
  await es?.svc.stop();
  await es?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it("suppresses what is pending for the user, drops their digest, anonymises them in others' digests, and a redelivery changes nothing", async () => {
  // Digest items: ada's own (actor bob) and bob's (actor ada, with her words); a pending immediate
  // email for ada, as a breaker hold leaves it.
  await es.publish(notificationCreated({ userId: 'ada', type: 'follow', actorId: 'bob', emailChannel: 'digest' }));
  await es.publish(
    notificationCreated({
      userId: 'bob',
      type: 'comment',
      actorId: 'ada',
      emailChannel: 'digest',
      excerpt: "ada's words",
    }),
  );
  await eventually('both digest items', async () => (await rows('SELECT 1 FROM email_digest_items')).length === 2);
  await es.svc.pool.query(
    `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, notification_type, state, smtp_response, last_error)
     VALUES ('mention:held:ada', 'immediate', 'ada', '<held@community.local>', 'mention', 'pending', '451 try later for ada@example.test', 'held for ada@example.test')`,
  );
  await es.svc.pool.query(`INSERT INTO email_suppressions (user_id, scope) VALUES ('ada', 'reaction')`);

  const event = erased('ada');
  const processedBefore = await es.metric('messaging_succeeded_total', {
    message_type: 'user.erased',
    outcome: 'processed',
  });
  await es.publish(event);
  await eventually(
    'the erasure is processed',
    async () =>
      (await es.metric('messaging_succeeded_total', { message_type: 'user.erased', outcome: 'processed' })) >
      processedBefore,
  );

  expect(await rows(`SELECT email, display_name FROM email_users WHERE user_id = 'ada'`)).toEqual([
    { email: '', display_name: 'a deleted user' },
  ]);
  expect(await rows(`SELECT state, smtp_response, last_error FROM email_deliveries WHERE user_id = 'ada'`)).toEqual([
    { state: 'suppressed', smtp_response: null, last_error: 'erased: the user was erased before this email was sent' },
  ]);
  expect(await rows(`SELECT user_id, actor_id, excerpt FROM email_digest_items`)).toEqual([
    { user_id: 'bob', actor_id: null, excerpt: null },
  ]);
  expect(await rows(`SELECT user_id FROM email_digest_windows`)).toEqual([{ user_id: 'bob' }]);
  expect(await rows(`SELECT 1 FROM email_suppressions WHERE user_id = 'ada'`)).toEqual([]);

  // Tomorrow: bob's digest goes out, naming nobody for the erased actor; nothing goes to ada.
  now = new Date(today.end.getTime() + 60_000);
  await es.svc.ticker.tick(now);
  await eventually("bob's digest", () => smtp.received.some((m) => m.to.includes('bob@example.test')));
  await es.svc.ticker.tick(now);
  expect(smtp.received.filter((m) => m.to.includes('ada@example.test'))).toEqual([]);
  const digest = smtp.received.find((m) => m.to.includes('bob@example.test'));
  expect(`${digest?.text ?? ''}${digest?.html ?? ''}`).not.toContain("ada's words");
  expect(`${digest?.text ?? ''}${digest?.html ?? ''}`).not.toContain('Ada');

  // ada comes back, then the same erasure is delivered again: the inbox has it, nothing changes.
  await es.publish(userUpserted('ada', 'ada-again@example.test', 'Ada', new Date(Date.now() + 60_000)));
  await eventually(
    'ada is back',
    async () => (await rows(`SELECT 1 FROM email_users WHERE email = 'ada-again@example.test'`)).length === 1,
  );
  const duplicatesBefore = await es.metric('messaging_succeeded_total', {
    message_type: 'user.erased',
    outcome: 'duplicate',
  });
  await es.publish(event);
  await eventually(
    'the redelivery is a duplicate',
    async () =>
      (await es.metric('messaging_succeeded_total', { message_type: 'user.erased', outcome: 'duplicate' })) >
      duplicatesBefore,
  );
  expect(await rows(`SELECT email FROM email_users WHERE user_id = 'ada'`)).toEqual([
    { email: 'ada-again@example.test' },
  ]);
}, 60_000);
