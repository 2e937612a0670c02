import { DEFAULT_PREFERENCES } from '@community/contracts';
import { deliveryFor, effectivePreferences, parsePreferencesUpdate } from './preferences';

describe('effectivePreferences / deliveryFor', () => {
  it('overlays stored choices on the defaults', () => {
    const prefs = effectivePreferences([{ type: 'mention', inApp: false, email: 'digest' }]);
    expect(prefs.mention).toEqual({ inApp: false, email: 'digest' });
    expect(prefs.reply).toEqual(DEFAULT_PREFERENCES.reply);
  });

  it('security alerts ignore whatever is stored', () => {
    const prefs = effectivePreferences([{ type: 'security_alert', inApp: false, email: 'off' }]);
    expect(deliveryFor(prefs, 'security_alert')).toEqual({ inApp: true, email: 'immediate' });
  });

  it('ignores rows of unknown types (a type removed from the contract)', () => {
    expect(effectivePreferences([{ type: 'poke', inApp: false, email: 'off' }])).toEqual(DEFAULT_PREFERENCES);
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
      message: "preferences.mention must be an object with 'inApp' and/or 'email'",
    });
  });
});
