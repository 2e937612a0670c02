import { formatPush, groupedTitleFor, oneLine, serialisePayload } from './payload';

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

describe('a group member says how many there are so far: counts, never names', () => {
  const member = (type: 'reaction' | 'follow' | 'reply' | 'comment', resourceType = 'post') => ({
    ...base,
    type,
    resourceType,
    idempotencyKey: `${type}:x`,
    groupKey: `${type}:g`,
    excerpt: 'the latest',
  });

  it.each([
    ['reaction', 'post', { members: 3, actors: 3 }, '3 people reacted to your post'],
    ['reaction', 'comment', { members: 2, actors: 2 }, '2 people reacted to your comment'],
    ['reaction', 'post', { members: 2, actors: 1 }, '2 reactions to your post'],
    ['follow', 'user', { members: 5, actors: 5 }, '5 people followed you'],
    ['follow', 'user', { members: 2, actors: 0 }, '2 new followers'],
    ['follow', 'user', { members: 2, actors: 1 }, 'Someone started following you'],
    ['reply', 'comment', { members: 2, actors: 1 }, '2 new replies to your comment'],
    ['comment', 'post', { members: 4, actors: 2 }, '4 comments on your post'],
  ] as const)('%s on a %s, %o: "%s"', (type, resourceType, group, title) => {
    const payload = formatPush(member(type, resourceType), 'https://x', group);
    expect(payload.title).toBe(title);
    // The body is the latest member's own, and the tag the group's.
    expect(payload.body).toBe('the latest');
    expect(payload.tag).toBe(formatPush({ ...member(type, resourceType), idempotencyKey: 'other' }, 'https://x').tag);
  });

  it("one member keeps the single text, as does a push without the group's count", () => {
    expect(formatPush(member('reaction'), 'https://x', { members: 1, actors: 1 }).title).toBe(
      'Someone reacted to your post',
    );
    expect(formatPush(member('reply', 'comment'), 'https://x').title).toBe('Someone replied to your comment');
    expect(groupedTitleFor('comment', 'post', { members: 1, actors: 1 })).toBeUndefined();
  });

  it('a mention and a security alert never group, even carrying a groupKey', () => {
    const mention = formatPush({ ...base, groupKey: 'g' }, 'https://x', { members: 4, actors: 4 });
    expect(mention.title).toBe('Someone mentioned you in a comment');
    expect(mention.tag).toBe(formatPush(base, 'https://x').tag);
    const alert = { ...base, type: 'security_alert' as const, resourceType: 'security_alert', groupKey: 'g' };
    expect(formatPush(alert, 'https://x', { members: 2, actors: 0 }).title).toBe('Security alert on your account');
  });
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
