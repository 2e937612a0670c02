import { NOTIFICATION_TYPES, type NotificationType } from '@community/contracts';
import { Composer } from '../delivery/compose';
import { messageIdDomain, messageIdFor } from '../message-id';
import { renderDigest, DIGEST_MAX_LINES } from './digest';
import { escapeHtml, headerSafe } from './escape';
import { renderNotification, type NotificationView } from './notification';
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

describe.each(NOTIFICATION_TYPES.map((t) => [t]))('the %s template', (type) => {
  const rendered = renderNotification(view(type), { publicBaseUrl: BASE, unsubscribeUrl: `${BASE}/unsub?token=a&b` });

  it('has a one-line subject, a text part and an HTML part linking to the notification', () => {
    expect(rendered.subject).not.toMatch(/[\r\n]/);
    expect(rendered.text).toContain(`${BASE}/notifications/n%2F1%3Fx`);
    expect(rendered.html).toContain(`href="${BASE}/notifications/n%2F1%3Fx"`);
    expect(rendered.html).toMatch(/^<!doctype html>/);
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
      if (type === 'security_alert') expect(rendered.html).not.toContain('Unsubscribe');
      else expect(rendered.html).toContain(`href="${BASE}/unsub?token=a&amp;b"`);
    },
  );
});

it('words each type', () => {
  const subjects = Object.fromEntries(
    NOTIFICATION_TYPES.map((t) => [
      t,
      renderNotification(view(t, { actorName: 'Ann' }), { publicBaseUrl: BASE }).subject,
    ]),
  );
  expect(subjects).toEqual({
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

it('renders a digest listing every item, summarising past the limit', () => {
  const items = Array.from({ length: DIGEST_MAX_LINES + 2 }, (_, i) =>
    view(i % 2 ? 'follow' : 'reaction', { notificationId: `n${i}` }),
  );
  const d = renderDigest(items, { publicBaseUrl: BASE, period: 'hourly', unsubscribeUrl: `${BASE}/u` });
  expect(d.subject).toBe(`Your hourly digest: ${DIGEST_MAX_LINES + 2} new notifications`);
  expect(d.text).toContain(`${BASE}/notifications/n0`);
  expect(d.text).toContain('... and 2 more');
  expect(d.html.match(/<li>/g)).toHaveLength(DIGEST_MAX_LINES);
  expect(d.html).not.toContain('<script>');
  expect(d.html).not.toContain('<img');
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

  it('takes the Message-ID domain from EMAIL_FROM', () => {
    expect(messageIdDomain('Community <notifications@Community.Local>')).toBe('community.local');
    expect(messageIdDomain('bare@example.org')).toBe('example.org');
    expect(messageIdDomain('no address')).toBe('email-service.local');
  });
});
