import { eventually } from '@community/testing';
import { digestKey, windowFor } from '../src/domain/digest-window';
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

// The daily digest at the user's local hour (docs/EMAIL.md "Delivery timing"): DIGEST_LOCAL_HOUR = 8
// in each user's time zone from user.upserted (UTC without one; a later event without the field
// keeps it). Real broker, Postgres and SMTP; the ticks are "at" the instants the windows end.
const now = new Date();
const jakarta = windowFor(now, 'daily', { timeZone: 'Asia/Jakarta', hour: 8 });
const utc = windowFor(now, 'daily', { hour: 8 });
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
const digestOf = (userId: string, start: Date) =>
  smtp.received.filter((m) => m.messageId === messageIdFor('digest', digestKey(userId, start), 'community.local'));
const handled = async () => s.metric('messaging_succeeded_total');

beforeAll(async () => {
  infra = await createInfra('email_localhour');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp, { DIGEST_LOCAL_HOUR: '8' }), { clock: () => now });
  const earlier = new Date(now.getTime() - 60_000);
  await s.publish(userUpserted('lh-jkt', 'jkt@example.test', 'Jakarta', earlier, { timezone: 'Asia/Jakarta' }));
  await s.publish(userUpserted('lh-utc', 'utc@example.test', 'Nowhere', earlier));
  await s.publish(userUpserted('lh-keep', 'keep@example.test', 'Keeps', earlier, { timezone: 'Asia/Jakarta' }));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 3);
  // A newer event without a time zone (a producer from before the field): the stored one stays.
  await s.publish(userUpserted('lh-keep', 'keep@example.test', 'Keeps Renamed', now));
  await eventually(
    'renamed',
    async () =>
      (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE display_name = 'Keeps Renamed'`)).rowCount === 1,
  );
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it("stores each user's time zone, keeping it when an event has none", async () => {
  const { rows } = await s.svc.pool.query(`SELECT user_id, timezone FROM email_users ORDER BY user_id`);
  expect(rows).toEqual([
    { user_id: 'lh-jkt', timezone: 'Asia/Jakarta' },
    { user_id: 'lh-keep', timezone: 'Asia/Jakarta' },
    { user_id: 'lh-utc', timezone: null },
  ]);
});

it("sends each user's daily digest when their own clock reads 08:00", async () => {
  const before = await handled();
  for (const userId of ['lh-jkt', 'lh-utc', 'lh-keep'])
    await s.publish(notificationCreated({ userId, type: 'follow', emailChannel: 'digest' }));
  await eventually('3 handled', async () => (await handled()) - before >= 3);
  const { rows } = await s.svc.pool.query(
    `SELECT user_id, window_start, window_end FROM email_digest_windows ORDER BY user_id`,
  );
  expect(rows).toEqual([
    { user_id: 'lh-jkt', window_start: jakarta.start, window_end: jakarta.end },
    { user_id: 'lh-keep', window_start: jakarta.start, window_end: jakarta.end },
    { user_id: 'lh-utc', window_start: utc.start, window_end: utc.end },
  ]);

  // Each group goes out when its own 08:00 comes, the earlier one first, the other not with it.
  const groups = [
    { end: jakarta.end, digests: () => [digestOf('lh-jkt', jakarta.start), digestOf('lh-keep', jakarta.start)] },
    { end: utc.end, digests: () => [digestOf('lh-utc', utc.start)] },
  ].sort((x, y) => x.end.getTime() - y.end.getTime());
  const counts = (g: (typeof groups)[number]) => g.digests().map((d) => d.length);
  await s.svc.ticker.tick(new Date(groups[0].end.getTime() - 60_000));
  expect([...counts(groups[0]), ...counts(groups[1])].every((n) => n === 0)).toBe(true);

  for (const [i, g] of groups.entries()) {
    const at = new Date(g.end.getTime() + 1_000);
    await s.svc.ticker.tick(at);
    await s.svc.ticker.tick(at);
    await eventually(`group ${i}'s digests`, async () => counts(g).every((n) => n === 1));
    if (i === 0) expect(counts(groups[1]).every((n) => n === 0)).toBe(true);
  }
  expect([...counts(groups[0]), ...counts(groups[1])]).toEqual([1, 1, 1]);
});
