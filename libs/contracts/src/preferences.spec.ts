import { DEFAULT_PREFERENCES, NOTIFICATION_TYPES, PREFERENCE_LOCKED_TYPES } from './preferences';

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
