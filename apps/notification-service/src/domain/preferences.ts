import {
  DEFAULT_PREFERENCES,
  EMAIL_CHANNELS,
  NOTIFICATION_TYPES,
  PREFERENCE_LOCKED_TYPES,
  type EmailChannel,
  type NotificationType,
} from '@community/contracts';

// effectivePreferences and deliveryFor live in libs/contracts (notification-rules.ts), shared with the
// reconciler's "why"; the HTTP body parser stays here.
export { deliveryFor, effectivePreferences } from '@community/contracts';
export type { PreferenceMap, StoredPreference } from '@community/contracts';

const isType = (t: string): t is NotificationType => (NOTIFICATION_TYPES as readonly string[]).includes(t);
const isLocked = (t: NotificationType) => PREFERENCE_LOCKED_TYPES.includes(t);

export interface PreferenceUpdate {
  type: NotificationType;
  inApp?: boolean;
  email?: EmailChannel;
}

export type ParseResult = { ok: true; updates: PreferenceUpdate[] } | { ok: false; message: string };

const CHANNELS = ['inApp', 'email'] as const;

/**
 * Validates a PUT body: `{ "preferences": { "<type>": { "inApp"?: boolean, "email"?: channel } } }`.
 * Only the given types and channels change. Every problem names the offending field and what is
 * allowed, so a 400 says exactly what to fix. A locked type (security_alert) may be sent only with
 * its fixed values: turning it off is refused rather than silently ignored.
 */
export function parsePreferencesUpdate(body: unknown): ParseResult {
  const fail = (message: string): ParseResult => ({ ok: false, message });
  if (!isPlainObject(body))
    return fail(
      'body must be a JSON object: { "preferences": { "<type>": { "inApp"?: boolean, "email"?: "immediate" | "digest" | "off" } } }',
    );
  const extra = Object.keys(body).filter((k) => k !== 'preferences');
  if (extra.length) return fail(`unknown field '${extra[0]}' in body (expected only 'preferences')`);
  const prefs = body.preferences;
  if (!isPlainObject(prefs)) return fail("'preferences' must be an object keyed by notification type");
  const updates: PreferenceUpdate[] = [];
  for (const [type, value] of Object.entries(prefs)) {
    if (!isType(type))
      return fail(`unknown notification type '${type}' (expected one of: ${NOTIFICATION_TYPES.join(', ')})`);
    if (!isPlainObject(value)) return fail(`preferences.${type} must be an object with 'inApp' and/or 'email'`);
    const unknown = Object.keys(value).find((k) => !(CHANNELS as readonly string[]).includes(k));
    if (unknown !== undefined)
      return fail(`unknown channel '${unknown}' for type '${type}' (expected one of: ${CHANNELS.join(', ')})`);
    const update: PreferenceUpdate = { type };
    if (value.inApp !== undefined) {
      if (typeof value.inApp !== 'boolean') return fail(`preferences.${type}.inApp must be a boolean`);
      update.inApp = value.inApp;
    }
    if (value.email !== undefined) {
      if (typeof value.email !== 'string' || !(EMAIL_CHANNELS as readonly string[]).includes(value.email)) {
        return fail(`preferences.${type}.email must be one of: ${EMAIL_CHANNELS.join(', ')}`);
      }
      update.email = value.email as EmailChannel;
    }
    if (isLocked(type)) {
      const fixed = DEFAULT_PREFERENCES[type];
      if (
        (update.inApp !== undefined && update.inApp !== fixed.inApp) ||
        (update.email !== undefined && update.email !== fixed.email)
      ) {
        return fail(`${type} cannot be changed: it is always delivered in-app and by immediate email`);
      }
      continue; // nothing to store: the fixed values are the defaults
    }
    if (update.inApp !== undefined || update.email !== undefined) updates.push(update);
  }
  return { ok: true, updates };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
