import { NOTIFICATION_TYPES, type NotificationType } from '@community/contracts';
import { Composer } from '../delivery/compose';
import { messageIdDomain, messageIdFor } from '../message-id';
import { renderDigest, DIGEST_MAX_LINES } from './digest';
import { escapeHtml, headerSafe } from './escape';
import { renderNotification, type NotificationView } from './notification';
import { langOf, type Lang } from './strings';
import { UnsubscribeTokens } from '../unsubscribe/token';

const BASE = 'https://community.example';
const hostile = 'Eve <script>alert("x")</script> & co\r\nBcc: victim@evil.test';
const view = (type: NotificationType, over: Partial<NotificationView> = {}): NotificationView => ({
  type,
  notificationId: 'n/1?x',
  actorName: hostile,
  resourceType: 'post',
  excerpt: 'line one <img src=x onerror=alert(1)>\r\nline two',
  ...over,
});

describe('escaping', () => {
  it('escapes the five HTML specials and strips every line break and control from header values', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
    expect(headerSafe('a\r\nBcc: x\u0000\u2028y\tz')).toBe('a Bcc: x y z');
    expect(headerSafe('x'.repeat(300))).toHaveLength(200);
  });
});

const LANGS: Lang[] = ['en', 'id'];

// The escaping guarantees hold in every language: the same specs run over each.
describe.each(LANGS.flatMap((lang) => NOTIFICATION_TYPES.map((t) => [lang, t] as const)))(
  'the %s %s template',
  (lang, type) => {
    const rendered = renderNotification(view(type), {
      publicBaseUrl: BASE,
      unsubscribeUrl: `${BASE}/unsub?token=a&b`,
      lang,
    });

    it('has a one-line subject, a text part and an HTML part linking to the notification', () => {
      expect(rendered.subject).not.toMatch(/[\r\n]/);
      expect(rendered.text).toContain(`${BASE}/notifications/n%2F1%3Fx`);
      expect(rendered.html).toContain(`href="${BASE}/notifications/n%2F1%3Fx"`);
      expect(rendered.html).toMatch(new RegExp(`^<!doctype html>\n<html lang="${lang}">`));
    });

    it('escapes every user-supplied value in the HTML part', () => {
      expect(rendered.html).not.toContain('<script>');
      expect(rendered.html).not.toContain('<img');
      if (type !== 'security_alert')
        expect(rendered.html).toContain(
          'Eve &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co Bcc: victim@evil.test',
        );
      expect(rendered.html).toContain('line one &lt;img src=x onerror=alert(1)&gt;<br>line two');
    });

    it(
      type === 'security_alert' ? 'offers no unsubscribe link (alerts are always sent)' : 'offers an unsubscribe link',
      () => {
        if (type === 'security_alert') expect(rendered.html).not.toMatch(/Unsubscribe|Berhenti berlangganan/);
        else expect(rendered.html).toContain(`href="${BASE}/unsub?token=a&amp;b"`);
      },
    );
  },
);

const subjectsIn = (lang: Lang) =>
  Object.fromEntries(
    NOTIFICATION_TYPES.map((t) => [
      t,
      renderNotification(view(t, { actorName: 'Ann' }), { publicBaseUrl: BASE, lang }).subject,
    ]),
  );

it('words each type', () => {
  expect(subjectsIn('en')).toEqual({
    mention: 'Ann mentioned you in a comment',
    reply: 'Ann replied to your comment',
    comment: 'Ann commented on your post',
    reaction: 'Ann reacted to your post',
    follow: 'Ann started following you',
    security_alert: 'Security alert on your account',
  });
  expect(renderNotification(view('follow', { actorName: undefined }), { publicBaseUrl: BASE }).subject).toBe(
    'Someone started following you',
  );
  expect(
    renderNotification(view('reaction', { actorName: 'Ann', resourceType: '<evil>' }), { publicBaseUrl: BASE }).subject,
  ).toBe('Ann reacted to your content');
});

it('words each type in Indonesian, and its footer and unsubscribe link', () => {
  expect(subjectsIn('id')).toEqual({
    mention: 'Ann menyebut Anda dalam sebuah komentar',
    reply: 'Ann membalas komentar Anda',
    comment: 'Ann mengomentari postingan Anda',
    reaction: 'Ann menanggapi postingan Anda',
    follow: 'Ann mulai mengikuti Anda',
    security_alert: 'Peringatan keamanan di akun Anda',
  });
  const at = (over: Partial<NotificationView>) =>
    renderNotification(view('reaction', { actorName: undefined, ...over }), {
      publicBaseUrl: BASE,
      unsubscribeUrl: `${BASE}/u`,
      lang: 'id',
    });
  expect(at({ resourceType: '<evil>' }).subject).toBe('Seseorang menanggapi konten Anda');
  expect(at({ resourceType: 'comment' }).subject).toBe('Seseorang menanggapi komentar Anda');
  expect(at({}).text).toContain('Lihat: https://community.example/notifications/');
  expect(at({}).text).toContain('Anda menerima email ini karena pengaturan notifikasi Anda.');
  expect(at({}).text).toContain(`Berhenti berlangganan email tanggapan: ${BASE}/u`);
  expect(at({}).html).toContain(`<a href="${BASE}/u">Berhenti berlangganan email tanggapan</a>`);
  const alert = renderNotification(view('security_alert'), { publicBaseUrl: BASE, lang: 'id' });
  expect(alert.text).toContain('Jika ini bukan Anda, segera ubah kata sandi Anda.');
  expect(alert.text).toContain('Peringatan keamanan selalu dikirim, apa pun pengaturan notifikasi Anda.');
});

it('speaks Indonesian to locale id and id-*, English to every other locale', () => {
  expect(['id', 'id-ID', 'ID', 'id_ID'].map(langOf)).toEqual(['id', 'id', 'id', 'id']);
  expect(['en', 'en-US', 'ms-MY', 'idx', 'fr', '', null, undefined].map(langOf)).toEqual(Array(8).fill('en'));
});

describe.each(LANGS.map((l) => [l]))('the %s digest', (lang) => {
  it('lists every item, summarising past the limit, every value escaped', () => {
    const items = Array.from({ length: DIGEST_MAX_LINES + 2 }, (_, i) =>
      view(i % 2 ? 'follow' : 'reaction', { notificationId: `n${i}` }),
    );
    const d = renderDigest(items, { publicBaseUrl: BASE, period: 'hourly', unsubscribeUrl: `${BASE}/u`, lang });
    expect(d.subject).toBe(
      lang === 'en'
        ? `Your hourly digest: ${DIGEST_MAX_LINES + 2} new notifications`
        : `Ringkasan per jam Anda: ${DIGEST_MAX_LINES + 2} notifikasi baru`,
    );
    expect(d.text).toContain(`${BASE}/notifications/n0`);
    expect(d.text).toContain(lang === 'en' ? '... and 2 more' : '... dan 2 lainnya');
    expect(d.text).toContain(
      lang === 'en' ? 'Unsubscribe from digest emails' : 'Berhenti berlangganan email ringkasan',
    );
    expect(d.html.match(/<li>/g)).toHaveLength(DIGEST_MAX_LINES);
    expect(d.html).not.toContain('<script>');
    expect(d.html).not.toContain('<img');
    expect(d.html).toContain('Eve &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co Bcc: victim@evil.test');
  });

  it('collapses items of one group into one line with the latest two actors and the others counted', () => {
    const actors = ['Ana', 'Budi', 'Citra', 'Dewi', 'Eko'];
    const member = (i: number, over: Partial<NotificationView> = {}) =>
      view('reaction', {
        notificationId: `g${i}`,
        actorId: `a${i}`,
        actorName: actors[i],
        groupKey: 'reaction:post:p1:2026-12-04',
        excerpt: undefined,
        ...over,
      });
    const render = (items: NotificationView[]) => renderDigest(items, { publicBaseUrl: BASE, period: 'daily', lang });
    // Oldest first: the latest are Ana (4th) and Budi (5th): Budi, then Ana.
    const five = [member(2), member(3), member(4), member(0), member(1)];
    const solo = view('follow', { notificationId: 'solo', actorName: 'Fajar', excerpt: undefined });
    const d = render([...five, solo]);
    expect(d.html.match(/<li>/g)).toHaveLength(2);
    expect(d.text).toContain(
      lang === 'en'
        ? `Budi, Ana and 3 others reacted to your post: ${BASE}/notifications/g1`
        : `Budi, Ana, dan 3 lainnya menanggapi postingan Anda: ${BASE}/notifications/g1`,
    );
    expect(d.text).toContain(lang === 'en' ? 'Fajar started following you' : 'Fajar mulai mengikuti Anda');
    expect(d.subject).toContain('6');
    // Two actors: "Ana and Budi"; one other: "... and 1 other".
    expect(render([member(1), member(0)]).text).toContain(
      lang === 'en' ? 'Ana and Budi reacted to your post' : 'Ana dan Budi menanggapi postingan Anda',
    );
    expect(render([member(2), member(1), member(0)]).text).toContain(
      lang === 'en' ? 'Ana, Budi and 1 other reacted' : 'Ana, Budi, dan 1 lainnya menanggapi',
    );
    // A deleted actor (no actor any more) is "someone"; the same actor twice counts once.
    expect(render([member(1), member(0, { actorId: null, actorName: undefined })]).text).toContain(
      lang === 'en' ? 'Someone and Budi reacted' : 'Seseorang dan Budi menanggapi',
    );
    expect(render([member(0, { actorId: null, actorName: undefined }), member(1)]).text).toContain(
      lang === 'en' ? 'Budi and someone reacted' : 'Budi dan seseorang menanggapi',
    );
    expect(render([member(0), member(1), member(0, { notificationId: 'g9' })]).text).toContain(
      lang === 'en' ? 'Ana and Budi reacted' : 'Ana dan Budi menanggapi',
    );
    // Names in a group line are escaped like any other.
    const hostileGroup = render([member(0, { actorName: hostile }), member(1)]);
    expect(hostileGroup.html).not.toContain('<script>');
    expect(hostileGroup.html).toContain('Eve &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co');
    expect(hostileGroup.text).not.toMatch(/co\r?\nBcc/);
  });
});

describe('Composer', () => {
  const tokens = new UnsubscribeTokens('secret-secret-secret-secret-secret-42');
  const composer = new Composer({
    publicBaseUrl: BASE,
    unsubscribeBaseUrl: 'https://mail.example/',
    messageIdDomain: 'community.example',
    digestPeriod: 'daily',
    tokens,
  });
  const user = {
    userId: 'u1',
    email: 'u1@example.test\r\nBcc: x@evil.test',
    displayName: 'Ann\r\nX-Evil: 1',
    locale: null,
  };

  it('derives the Message-ID from the key, sets list headers, and strips CR/LF from recipient fields', () => {
    const mail = composer.notification(user, view('mention'), 'mention:c1:u1');
    expect(mail.messageId).toBe(messageIdFor('immediate', 'mention:c1:u1', 'community.example'));
    expect(mail.messageId).toMatch(/^<[0-9a-f]{40}\.immediate@community\.example>$/);
    expect(composer.notification(user, view('mention'), 'mention:c1:u1').messageId).toBe(mail.messageId);
    expect(mail.to).toEqual({ name: 'Ann X-Evil: 1', address: 'u1@example.test Bcc: x@evil.test' });
    const link = /^<https:\/\/mail\.example\/v1\/unsubscribe\?token=(.+)>$/.exec(mail.headers['List-Unsubscribe']);
    expect(tokens.verify(decodeURIComponent(link?.[1] ?? ''))).toMatchObject({
      ok: true,
      claim: { userId: 'u1', scope: 'mention' },
    });
    expect(mail.headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    expect(Object.values(mail.headers).join('')).not.toMatch(/[\r\n]/);
  });

  it('gives security alerts no List-Unsubscribe, and digests a digest-scoped one', () => {
    expect(
      composer.notification(user, view('security_alert'), 'security:a1').headers['List-Unsubscribe'],
    ).toBeUndefined();
    expect(composer.notification(user, view('security_alert'), 'security:a1').priority).toBe('critical');
    expect(composer.notification(user, view('mention'), 'mention:c1:u1').priority).toBe('regular');
    const digest = composer.digest(user, [view('follow')], 'digest:u1:2026-11-29T00:00:00.000Z');
    const token = decodeURIComponent(/token=([^>]+)>/.exec(digest.headers['List-Unsubscribe'])?.[1] ?? '');
    expect(tokens.verify(token)).toMatchObject({ ok: true, claim: { userId: 'u1', scope: 'digest' } });
    expect(digest.messageId).not.toBe(composer.immediateMessageId('digest:u1:2026-11-29T00:00:00.000Z'));
  });

  it('writes to a user whose locale is id or id-* in Indonesian, subject, parts and footer', () => {
    const indonesian = { ...user, locale: 'id-ID' };
    const mail = composer.notification(indonesian, view('follow', { actorName: 'Ana' }), 'follow:u2:u1');
    expect(mail.subject).toBe('Ana mulai mengikuti Anda');
    expect(mail.text).toContain('Berhenti berlangganan email pengikut baru');
    expect(mail.html).toContain('<html lang="id">');
    expect(composer.digest(indonesian, [view('follow')], 'digest:u1:x').subject).toBe(
      'Ringkasan harian Anda: 1 notifikasi baru',
    );
    expect(composer.notification({ ...user, locale: 'en-GB' }, view('follow', { actorName: 'Ana' }), 'k').subject).toBe(
      'Ana started following you',
    );
  });

  it('takes the Message-ID domain from EMAIL_FROM', () => {
    expect(messageIdDomain('Community <notifications@Community.Local>')).toBe('community.local');
    expect(messageIdDomain('bare@example.org')).toBe('example.org');
    expect(messageIdDomain('no address')).toBe('email-service.local');
  });
});
