import {
  DEFAULT_PREFERENCES,
  deliveryFor as contractDeliveryFor,
  EMAIL_CHANNELS,
  effectivePreferences as contractEffectivePreferences,
  NOTIFICATION_TYPES,
  PREFERENCE_LOCKED_TYPES,
  pushFor,
  quietHoursIssue,
  type DecidedChannels,
  type EmailChannel,
  type NotificationType,
  type QuietHours,
  type StoredPreference as ContractStoredPreference,
} from '@community/contracts';

// effectivePreferences and deliveryFor live in libs/contracts (notification-rules.ts), shared with the
// reconciler's "why"; these add the push channel to them (a stored row's `push`, NULL or absent
// meaning the type's default: pushFor), and the HTTP body parser stays here.

const isType = (t: string): t is NotificationType => (NOTIFICATION_TYPES as readonly string[]).includes(t);
const isLocked = (t: NotificationType) => PREFERENCE_LOCKED_TYPES.includes(t);

/** A user's row for one type; `push` NULL (or absent, a reader from before the column): the default. */
export interface StoredPreference extends ContractStoredPreference {
  push?: boolean | null;
}

/** Every type with every channel decided. */
export type PreferenceMap = Record<NotificationType, DecidedChannels>;

/** Defaults overlaid with the user's stored choices, push included; locked types keep their defaults. */
export function effectivePreferences(stored: readonly StoredPreference[]): PreferenceMap {
  const base = contractEffectivePreferences(stored);
  const chosen = new Map(stored.filter((r) => isType(r.type)).map((r) => [r.type as NotificationType, r.push]));
  return Object.fromEntries(
    NOTIFICATION_TYPES.map((t) => [t, { inApp: base[t].inApp, email: base[t].email, push: pushFor(t, chosen.get(t)) }]),
  ) as PreferenceMap;
}

/**
 * What a notification of `type` does for a user with these preferences. Security alerts ignore
 * them (the contract: always in-app, immediate email and push).
 */
export function deliveryFor(prefs: PreferenceMap, type: NotificationType): DecidedChannels {
  const decided = contractDeliveryFor(prefs, type);
  return { inApp: decided.inApp, email: decided.email, push: isLocked(type) ? true : prefs[type].push };
}

export interface PreferenceUpdate {
  type: NotificationType;
  inApp?: boolean;
  email?: EmailChannel;
  push?: boolean;
}

export type ParseResult =
  | {
      ok: true;
      updates: PreferenceUpdate[];
      /** The new quiet hours (null: none any more); absent: unchanged. */
      quietHours?: QuietHours | null;
    }
  | { ok: false; message: string };

const CHANNELS = ['inApp', 'email', 'push'] as const;

/**
 * Validates a PUT body: `{ "preferences"?: { "<type>": { "inApp"?: boolean, "email"?: channel, "push"?: boolean } },
 * "quietHours"?: { "start": "HH:MM", "end": "HH:MM" } | null }`, at least one of the two.
 * Only the given types and channels change, and the quiet hours only when given. Every problem names the offending field and what is
 * allowed, so a 400 says exactly what to fix. A locked type (security_alert) may be sent only with
 * its fixed values: turning it off is refused rather than silently ignored.
 */
export function parsePreferencesUpdate(body: unknown): ParseResult {
  const fail = (message: string): ParseResult => ({ ok: false, message });
  if (!isPlainObject(body))
    return fail(
      'body must be a JSON object: { "preferences"?: { "<type>": { "inApp"?: boolean, "email"?: "immediate" | "digest" | "off", "push"?: boolean } }, "quietHours"?: { "start": "HH:MM", "end": "HH:MM" } | null }',
    );
  const extra = Object.keys(body).filter((k) => k !== 'preferences' && k !== 'quietHours');
  if (extra.length) return fail(`unknown field '${extra[0]}' in body (expected 'preferences' and/or 'quietHours')`);
  if (body.preferences === undefined && body.quietHours === undefined)
    return fail("body must have 'preferences' and/or 'quietHours'");
  let quietHours: QuietHours | null | undefined;
  if (body.quietHours !== undefined) {
    if (body.quietHours === null) quietHours = null;
    else {
      const issue = quietHoursIssue(body.quietHours);
      if (issue !== undefined) return fail(issue);
      const { start, end } = body.quietHours as unknown as QuietHours;
      quietHours = { start, end };
    }
  }
  const prefs = body.preferences ?? {};
  if (!isPlainObject(prefs)) return fail("'preferences' must be an object keyed by notification type");
  const updates: PreferenceUpdate[] = [];
  for (const [type, value] of Object.entries(prefs)) {
    if (!isType(type))
      return fail(`unknown notification type '${type}' (expected one of: ${NOTIFICATION_TYPES.join(', ')})`);
    if (!isPlainObject(value)) return fail(`preferences.${type} must be an object with 'inApp', 'email' and/or 'push'`);
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
    if (value.push !== undefined) {
      if (typeof value.push !== 'boolean') return fail(`preferences.${type}.push must be a boolean`);
      update.push = value.push;
    }
    if (isLocked(type)) {
      const fixed = DEFAULT_PREFERENCES[type];
      if (
        (update.inApp !== undefined && update.inApp !== fixed.inApp) ||
        (update.email !== undefined && update.email !== fixed.email) ||
        (update.push !== undefined && update.push !== fixed.push)
      ) {
        return fail(`${type} cannot be changed: it is always delivered in-app, by immediate email and by push`);
      }
      continue; // nothing to store: the fixed values are the defaults
    }
    if (update.inApp !== undefined || update.email !== undefined || update.push !== undefined) updates.push(update);
  }
  return quietHours === undefined ? { ok: true, updates } : { ok: true, updates, quietHours };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
