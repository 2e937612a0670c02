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

// Digest windows with an injected clock: items collected "today", flushed "tomorrow" by two
// replicas racing each other.
const DAY = 86_400_000;
const today = windowFor(new Date(), 'daily');
let clockA = new Date(today.start.getTime() + 12 * 3_600_000);
let infra: Infra;
let smtp: TestSmtp;
let a: StartedService;
let b: StartedService;
const USERS = 12;

const itemCount = async () =>
  Number((await a.svc.pool.query('SELECT count(*)::int AS n FROM email_digest_items')).rows[0].n);
const digestEmailsFor = (userId: string, start: Date) =>
  smtp.received.filter((m) => m.messageId === messageIdFor('digest', digestKey(userId, start), 'community.local'));

beforeAll(async () => {
  infra = await createInfra('email_digest');
  smtp = await new TestSmtp().start();
  // Small batches, so the two flushers interleave over many transactions instead of one taking all.
  const config = testConfig(infra, smtp, { DIGEST_BATCH_SIZE: '3' });
  a = await startService(config, { clock: () => clockA });
  b = await startService(config, { clock: () => clockA });
  await a.publish(userUpserted('bob', 'bob@example.test', 'Bob <b>'));
  for (let i = 0; i < USERS; i++) await a.publish(userUpserted(`u${i}`, `u${i}@example.test`, `User ${i}`));
  await eventually(
    'users projected',
    async () => (await a.svc.pool.query('SELECT 1 FROM email_users')).rowCount === USERS + 1,
  );
});

afterAll(async () => {
  await a?.svc.stop();
  await b?.svc.stop();
  await Promise.all([a?.svc.app.close(), b?.svc.app.close()]);
  await smtp?.close();
  await infra?.close();
});

it('collects digest items, and two flushers racing send exactly one digest per user and window', async () => {
  const types = ['follow', 'reaction', 'comment'] as const;
  const events = [];
  for (let i = 0; i < USERS; i++) {
    for (const type of types)
      events.push(
        notificationCreated({
          userId: `u${i}`,
          type,
          actorId: 'bob',
          emailChannel: 'digest',
          excerpt: type === 'comment' ? 'Nice <i>post</i>' : undefined,
        }),
      );
  }
  await Promise.all(events.map((e) => a.publish(e)));
  await a.publish(events[0]); // a duplicate delivery adds nothing
  await eventually('items collected', async () => (await itemCount()) === USERS * types.length);

  // Not due yet: nothing is sent.
  await Promise.all([a.svc.ticker.tick(clockA), b.svc.ticker.tick(clockA)]);
  expect(smtp.received).toHaveLength(0);

  const tomorrow = new Date(today.end.getTime() + 60_000);
  await Promise.all([
    a.svc.ticker.tick(tomorrow),
    b.svc.ticker.tick(tomorrow),
    a.svc.ticker.tick(tomorrow),
    b.svc.ticker.tick(tomorrow),
  ]);
  await eventually('every digest sent', () => smtp.received.length >= USERS);
  await Promise.all([a.svc.ticker.tick(tomorrow), b.svc.ticker.tick(tomorrow)]);
  // The ticks are awaited, each until its sends had the server's answer, and nothing else sends
  // digests (runTicker: false): what the server has now is all there will be.

  expect(smtp.received).toHaveLength(USERS);
  for (let i = 0; i < USERS; i++) expect(digestEmailsFor(`u${i}`, today.start)).toHaveLength(1);
  const { rows } = await a.svc.pool.query(
    `SELECT status, count(*)::int AS n FROM email_digest_windows GROUP BY status`,
  );
  expect(rows).toEqual([{ status: 'flushed', n: USERS }]);
  await eventually(
    'every digest recorded sent',
    async () =>
      (
        await a.svc.pool.query(
          `SELECT count(*)::int AS n FROM email_deliveries WHERE channel = 'digest' AND state = 'sent'`,
        )
      ).rows[0].n === USERS,
  );

  const [mail] = digestEmailsFor('u0', today.start);
  expect(mail.subject).toBe('Your daily digest: 3 new notifications');
  expect(mail.text).toContain('Bob <b> started following you');
  expect(mail.text).toContain('Bob <b> reacted to your comment');
  expect(mail.html).toContain('Bob &lt;b&gt; commented on your post');
  expect(mail.html).toContain('Nice &lt;i&gt;post&lt;/i&gt;');
  expect(mail.html).toContain(`href="http://127.0.0.1:3000/notifications/${events[0].data.notificationId}"`);
  expect(mail.headers.get('list-unsubscribe')).toMatch(/\/v1\/unsubscribe\?token=/);
  expect(mail.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
});

it('puts an item that arrives after its window was flushed into the next window', async () => {
  // Replica A's clock is still "today" (its window is flushed); the item must not be lost in it.
  const late = notificationCreated({ userId: 'u1', type: 'follow', actorId: 'bob', emailChannel: 'digest' });
  await a.publish(late);
  await eventually('late item stored', async () => {
    const { rows } = await a.svc.pool.query(
      `SELECT w.window_start FROM email_digest_items i JOIN email_digest_windows w ON w.id = i.window_id WHERE i.idempotency_key = $1`,
      [late.data.idempotencyKey],
    );
    return rows[0]?.window_start.getTime() === today.end.getTime();
  });
});

it('sends nothing for a window whose items were all opted out (an empty window)', async () => {
  clockA = new Date(today.end.getTime() + 2 * DAY + 3_600_000); // some later day
  const day = windowFor(clockA, 'daily');
  const item = notificationCreated({ userId: 'u2', type: 'reaction', actorId: 'bob', emailChannel: 'digest' });
  await a.publish(item);
  await eventually(
    'item stored',
    async () =>
      (
        await a.svc.pool.query(`SELECT 1 FROM email_digest_items WHERE idempotency_key = $1`, [
          item.data.idempotencyKey,
        ])
      ).rowCount === 1,
  );
  // The user unsubscribes from reaction emails before the window closes.
  await a.svc.pool.query(`INSERT INTO email_suppressions (user_id, scope) VALUES ('u2', 'reaction')`);
  await Promise.all([a.svc.ticker.tick(day.end), b.svc.ticker.tick(day.end)]);
  // The same ticks flush the late item's window of the previous test: that one is sent, once.
  // Awaited ticks (see above): the server's count is final once they resolved.
  await eventually('the late window sent', () => digestEmailsFor('u1', today.end).length === 1);
  expect(digestEmailsFor('u2', day.start)).toHaveLength(0);
  expect(smtp.received.filter((m) => m.rcptTo.includes('u2@example.test'))).toHaveLength(1); // only yesterday's
  const { rows } = await a.svc.pool.query(
    `SELECT status FROM email_digest_windows WHERE user_id = 'u2' AND window_start = $1`,
    [day.start],
  );
  expect(rows).toEqual([{ status: 'empty' }]);
  // Either replica may have claimed it; together they counted it once (no earlier window was empty).
  const empties =
    (await a.metric('email_digest_windows_total', { outcome: 'empty' })) +
    (await b.metric('email_digest_windows_total', { outcome: 'empty' }));
  expect(empties).toBe(1);
});
