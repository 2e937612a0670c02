import { DEFAULT_PREFERENCES } from '@community/contracts';
import { deliveryFor, effectivePreferences, parsePreferencesUpdate } from './preferences';

describe('effectivePreferences / deliveryFor', () => {
  it('overlays stored choices on the defaults', () => {
    const prefs = effectivePreferences([{ type: 'mention', inApp: false, email: 'digest' }]);
    expect(prefs.mention).toEqual({ inApp: false, email: 'digest', push: true });
    expect(prefs.reply).toEqual(DEFAULT_PREFERENCES.reply);
  });

  it('security alerts ignore whatever is stored', () => {
    const prefs = effectivePreferences([{ type: 'security_alert', inApp: false, email: 'off' }]);
    expect(deliveryFor(prefs, 'security_alert')).toEqual({ inApp: true, email: 'immediate', push: true });
  });

  it('ignores rows of unknown types (a type removed from the contract)', () => {
    expect(effectivePreferences([{ type: 'poke', inApp: false, email: 'off' }])).toEqual(DEFAULT_PREFERENCES);
  });
});

describe('the push channel', () => {
  it('is the stored choice, and the default where the row has none (NULL: stored before the column)', () => {
    const prefs = effectivePreferences([
      { type: 'mention', inApp: true, email: 'immediate', push: false },
      { type: 'follow', inApp: true, email: 'digest', push: true },
      { type: 'reply', inApp: false, email: 'off', push: null },
      { type: 'reaction', inApp: true, email: 'off' },
    ]);
    expect(prefs.mention.push).toBe(false);
    expect(prefs.follow.push).toBe(true);
    expect(prefs.reply.push).toBe(true);
    expect(prefs.reaction.push).toBe(false);
    expect(prefs.comment.push).toBe(false);
  });

  it('pushes a security alert whatever is stored', () => {
    const prefs = effectivePreferences([{ type: 'security_alert', inApp: false, email: 'off', push: false }]);
    expect(prefs.security_alert.push).toBe(true);
    expect(deliveryFor(prefs, 'security_alert').push).toBe(true);
  });

  it("deliveryFor carries the user's push choice", () => {
    const prefs = effectivePreferences([{ type: 'mention', inApp: true, email: 'immediate', push: false }]);
    expect(deliveryFor(prefs, 'mention')).toEqual({ inApp: true, email: 'immediate', push: false });
  });

  it('parses push and refuses a non-boolean or a locked type turned off', () => {
    expect(parsePreferencesUpdate({ preferences: { mention: { push: false } } })).toEqual({
      ok: true,
      updates: [{ type: 'mention', push: false }],
    });
    expect(parsePreferencesUpdate({ preferences: { mention: { push: 1 } } })).toEqual({
      ok: false,
      message: 'preferences.mention.push must be a boolean',
    });
    expect(parsePreferencesUpdate({ preferences: { security_alert: { push: false } } })).toMatchObject({ ok: false });
    expect(parsePreferencesUpdate({ preferences: { security_alert: { push: true } } })).toEqual({
      ok: true,
      updates: [],
    });
  });
});

describe('parsePreferencesUpdate', () => {
  it('accepts partial updates', () => {
    expect(parsePreferencesUpdate({ preferences: { follow: { email: 'off' } } })).toEqual({
      ok: true,
      updates: [{ type: 'follow', email: 'off' }],
    });
  });

  it('drops empty entries and the locked type at its fixed values', () => {
    expect(
      parsePreferencesUpdate({ preferences: { follow: {}, security_alert: { inApp: true, email: 'immediate' } } }),
    ).toEqual({ ok: true, updates: [] });
  });

  it('names the problem', () => {
    expect(parsePreferencesUpdate(null)).toMatchObject({ ok: false, message: expect.stringContaining('JSON object') });
    expect(parsePreferencesUpdate({ preferences: { mention: 'off' } })).toMatchObject({
      ok: false,
      message: "preferences.mention must be an object with 'inApp', 'email' and/or 'push'",
    });
  });
});
