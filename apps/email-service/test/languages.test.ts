import { buildEvent } from '@community/contracts';
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

// Languages and grouped digest lines (docs/EMAIL.md "Languages and grouped digest lines"), end to
// end: a user whose locale is `id` gets Indonesian email, everyone else English; reactions of one
// inbox group are one digest line naming the latest two actors, a deleted one as "someone".
const now = new Date();
const today = windowFor(now, 'daily');
let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
const handled = async () => s.metric('messaging_succeeded_total');
const digestOf = (userId: string) =>
  smtp.received.find((m) => m.messageId === messageIdFor('digest', digestKey(userId, today.start), 'community.local'));

beforeAll(async () => {
  infra = await createInfra('email_languages');
  smtp = await new TestSmtp().start();
  s = await startService(testConfig(infra, smtp), { clock: () => now });
  await s.publish(userUpserted('lg-id', 'id@example.test', 'Putri', now, { locale: 'id-ID' }));
  await s.publish(userUpserted('lg-en', 'en@example.test', 'Paul', now, { locale: 'en-US' }));
  for (const [id, name] of [
    ['lg-a', 'Ana'],
    ['lg-b', 'Budi'],
    ['lg-c', 'Citra'],
    ['lg-d', 'Dewi'],
  ])
    await s.publish(userUpserted(id, `${id}@example.test`, name, now));
  await eventually('users projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 6);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it('an immediate email to a user whose locale is id-ID is Indonesian, and English to en-US', async () => {
  const toId = notificationCreated({ userId: 'lg-id', actorId: 'lg-a', excerpt: '<b>halo</b>' });
  const toEn = notificationCreated({ userId: 'lg-en', actorId: 'lg-a' });
  await s.publish(toId);
  await s.publish(toEn);
  const id = await eventually('the Indonesian email', async () =>
    smtp.received.find((m) => m.messageId === messageIdFor('immediate', toId.data.idempotencyKey, 'community.local')),
  );
  expect(id.subject).toBe('Ana menyebut Anda dalam sebuah komentar');
  expect(id.text).toContain('Berhenti berlangganan email sebutan');
  expect(id.html).toContain('&lt;b&gt;halo&lt;/b&gt;');
  const en = await eventually('the English email', async () =>
    smtp.received.find((m) => m.messageId === messageIdFor('immediate', toEn.data.idempotencyKey, 'community.local')),
  );
  expect(en.subject).toBe('Ana mentioned you in a comment');
});

it('collapses a group into one digest line with the latest actors, a deleted one as someone, in each language', async () => {
  const before = await handled();
  const events = [];
  for (const userId of ['lg-id', 'lg-en']) {
    ['lg-a', 'lg-b', 'lg-c', 'lg-d'].forEach((actorId, i) =>
      events.push(
        notificationCreated({
          userId,
          actorId,
          type: 'reaction',
          resourceType: 'post',
          resourceId: 'p1',
          emailChannel: 'digest',
          groupKey: `reaction:post:p1:${userId}`,
          occurredAt: new Date(now.getTime() - (10 - i) * 1_000),
        }),
      ),
    );
    events.push(notificationCreated({ userId, actorId: 'lg-a', type: 'follow', emailChannel: 'digest' }));
  }
  for (const e of events) await s.publish(e);
  await eventually('collected', async () => (await handled()) - before >= events.length);

  // Dewi, the latest reactor, is erased before the digest goes out.
  await s.publish(buildEvent('user.erased', { userId: 'lg-d', erasureId: '1' }, { producer: 'reconciler' }));
  await eventually(
    'the erased actor is gone from the items',
    async () => (await s.svc.pool.query(`SELECT 1 FROM email_digest_items WHERE actor_id = 'lg-d'`)).rowCount === 0,
  );

  await s.svc.ticker.tick(new Date(today.end.getTime() + 60_000));
  await s.svc.ticker.tick(new Date(today.end.getTime() + 60_000));
  const id = await eventually('the Indonesian digest', async () => digestOf('lg-id'));
  expect(id.subject).toBe('Ringkasan harian Anda: 5 notifikasi baru');
  expect(id.text).toContain('Seseorang, Citra, dan 2 lainnya menanggapi postingan Anda');
  expect(id.text).toContain('Ana mulai mengikuti Anda');
  expect(id.html.match(/<li>/g)).toHaveLength(2);
  expect(id.text).toContain('Berhenti berlangganan email ringkasan');
  const en = await eventually('the English digest', async () => digestOf('lg-en'));
  expect(en.subject).toBe('Your daily digest: 5 new notifications');
  expect(en.text).toContain('Someone, Citra and 2 others reacted to your post');
  expect(en.html.match(/<li>/g)).toHaveLength(2);
});
