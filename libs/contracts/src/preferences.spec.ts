import { DEFAULT_PREFERENCES, NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES, pushFor } from './preferences';

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

  it('push on for what is addressed to the user (mention, reply, security alert), off for the digest-ish types', () => {
    expect(Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, DEFAULT_PREFERENCES[t].push]))).toEqual({
      mention: true,
      reply: true,
      comment: false,
      reaction: false,
      follow: false,
      security_alert: true,
    });
  });

  it('cannot be mutated by a consumer', () => {
    expect(Object.isFrozen(DEFAULT_PREFERENCES)).toBe(true);
    expect(Object.isFrozen(DEFAULT_PREFERENCES.mention)).toBe(true);
    expect(PREFERENCE_LOCKED_TYPES).toEqual(['security_alert']);
  });
});

describe('pushFor', () => {
  it('pushes a security alert whatever was chosen', () => {
    expect(pushFor('security_alert', false)).toBe(true);
    expect(pushFor('security_alert', undefined)).toBe(true);
  });

  it('follows the choice of an unlocked type, and its default without one', () => {
    expect(pushFor('mention', false)).toBe(false);
    expect(pushFor('follow', true)).toBe(true);
    expect(pushFor('mention', undefined)).toBe(true);
    expect(pushFor('reaction', null)).toBe(false);
  });
});
