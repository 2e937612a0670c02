import { eventually } from '@community/testing';
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

// A forced shutdown with sends in flight: the drain deadline aborts them (EABORT). Aborts are not
// provider failures, so the breaker must not open. Real broker, database and SMTP server.
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
let releaseReplies: () => void = () => undefined;

beforeAll(async () => {
  infra = await createInfra('email_shutdown');
  smtp = await new TestSmtp().start();
  // The provider takes the messages in and sits on its replies until the test lets it answer.
  const replies = new Promise<void>((resolve) => (releaseReplies = resolve));
  smtp.behaviour.onMessage = async () => {
    await replies;
    return undefined;
  };
  s = await startService(
    testConfig(infra, smtp, {
      SMTP_BREAKER_THRESHOLD: '3',
      SHUTDOWN_TIMEOUT_MS: '500',
      SMTP_SOCKET_TIMEOUT_MS: '20000',
      EMAIL_LEASE_MS: '60000',
    }),
  );
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('user projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
});

afterAll(async () => {
  releaseReplies();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it('a forced shutdown aborting 5 sends in flight leaves the breaker closed', async () => {
  for (let i = 0; i < 5; i++)
    await s.publish(notificationCreated({ userId: 'alice', type: 'mention', emailChannel: 'immediate' }));
  // All five are on the wire, waiting for the server's reply to DATA.
  await eventually('5 sends in flight', () => smtp.received.length === 5);

  await s.svc.stop(); // the 500 ms drain deadline passes: the runtime aborts the five handlers

  await eventually(
    '5 sends aborted',
    async () => (await s.metric('email_sends_total', { outcome: 'aborted' })) === 5,
    20_000,
  );
  expect(s.svc.breaker.describe()).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
  expect(await s.metric('email_smtp_breaker_transitions_total', { to: 'open' })).toBe(0);
  // Nothing was recorded as sent: each aborted handler puts its row back to pending (it may finish
  // just after stop() returned) for the message's redelivery.
  await eventually(
    'rows released',
    async () => {
      const { rows } = await s.svc.pool.query(`SELECT state, count(*)::int AS n FROM email_deliveries GROUP BY state`);
      return rows.length === 1 && rows[0].state === 'pending' && rows[0].n === 5;
    },
    20_000,
  );
});
