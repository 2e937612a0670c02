import {
  DEFAULT_PREFERENCES,
  NOTIFICATION_TYPES,
  PREFERENCE_LOCKED_TYPES,
  commentOnPostKey,
  followKey,
  mentionKey,
  reactionKey,
  replyKey,
  securityAlertKey,
} from './idempotency-keys';

describe('idempotency keys', () => {
  it('follow the contract formats', () => {
    expect(mentionKey('c1', 'u1')).toBe('mention:c1:u1');
    expect(replyKey('c2', 'u3')).toBe('reply:c2:u3');
    expect(commentOnPostKey('c2', 'u1')).toBe('comment:c2:u1');
    expect(followKey('u2', 'u1')).toBe('follow:u2:u1');
    expect(reactionKey('r1')).toBe('reaction:r1');
    expect(securityAlertKey('a1')).toBe('security:a1');
  });

  it('keep uuids verbatim', () => {
    const id = '6f1c2a4e-8b7d-4c3e-9a51-2d0b9e7f4a10';
    expect(mentionKey(id, id)).toBe(`mention:${id}:${id}`);
  });

  it('stay unambiguous when ids contain the separator', () => {
    expect(mentionKey('a:b', 'c')).not.toBe(mentionKey('a', 'b:c'));
    expect(mentionKey('a:b', 'c')).toBe('mention:a%3Ab:c');
    expect(followKey('a%3Ab', 'c')).not.toBe(followKey('a:b', 'c'));
  });

  it('refuse empty ids', () => {
    expect(() => reactionKey('')).toThrow(/reactionId/);
    expect(() => followKey('u1', '')).toThrow(/followeeId/);
  });
});

describe('default preferences', () => {
  it('cover every notification type with in-app on', () => {
    expect(Object.keys(DEFAULT_PREFERENCES).sort()).toEqual([...NOTIFICATION_TYPES].sort());
    for (const type of NOTIFICATION_TYPES) expect(DEFAULT_PREFERENCES[type].inApp).toBe(true);
  });

  it('email as the contract says', () => {
    expect(DEFAULT_PREFERENCES.mention.email).toBe('immediate');
    expect(DEFAULT_PREFERENCES.reply.email).toBe('immediate');
    expect(DEFAULT_PREFERENCES.security_alert.email).toBe('immediate');
    expect(DEFAULT_PREFERENCES.follow.email).toBe('digest');
    expect(DEFAULT_PREFERENCES.reaction.email).toBe('digest');
    expect(DEFAULT_PREFERENCES.comment.email).toBe('digest');
  });

  it('cannot be mutated by a consumer', () => {
    expect(Object.isFrozen(DEFAULT_PREFERENCES)).toBe(true);
    expect(Object.isFrozen(DEFAULT_PREFERENCES.mention)).toBe(true);
    expect(PREFERENCE_LOCKED_TYPES).toEqual(['security_alert']);
  });
});
