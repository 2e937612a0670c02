import { formatPush, oneLine, serialisePayload } from './payload';

const base = {
  notificationId: 'n-1',
  type: 'mention' as const,
  idempotencyKey: 'mention:c-1:ada',
  resourceType: 'comment',
};

it('says what happened, with the excerpt as the body and a link to the notification', () => {
  expect(formatPush({ ...base, excerpt: 'What do you think, @ada?' }, 'https://community.example/')).toEqual({
    title: 'Someone mentioned you in a comment',
    body: 'What do you think, @ada?',
    url: 'https://community.example/notifications/n-1',
    tag: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    notificationId: 'n-1',
    type: 'mention',
  });
});

it('a security alert says so, and a group shares one tag', () => {
  const alert = formatPush({ ...base, type: 'security_alert', resourceType: 'security_alert' }, 'https://x');
  expect(alert.title).toBe('Security alert on your account');
  expect(alert.body).toBe('Check your account activity now.');
  const a = formatPush({ ...base, type: 'reaction', idempotencyKey: 'reaction:r1', groupKey: 'g' }, 'https://x');
  const b = formatPush({ ...base, type: 'reaction', idempotencyKey: 'reaction:r2', groupKey: 'g' }, 'https://x');
  expect(a.tag).toBe(b.tag);
  expect(a.title).toBe('Someone reacted to your comment');
});

it('keeps the body one short line without control characters', () => {
  expect(oneLine('a\r\nb\u2028c\u0007d', 100)).toBe('a b c d');
  const long = formatPush({ ...base, excerpt: 'x'.repeat(500) }, 'https://x');
  expect(long.body).toHaveLength(180);
  expect(long.body.endsWith('…')).toBe(true);
});

it('serialises <, >, & and the line separators as \\u escapes: the same JSON, inert in HTML', () => {
  const payload = formatPush({ ...base, excerpt: '<script>alert("x")</script> & co' }, 'https://x');
  const text = serialisePayload(payload);
  expect(text).not.toMatch(/[<>&]/);
  expect(JSON.parse(text)).toEqual(payload);
});
