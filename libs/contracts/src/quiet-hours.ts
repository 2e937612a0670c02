// Quiet hours (docs/NOTIFICATIONS.md "Delivery timing"): a daily window of the user's local wall
// clock ("22:00"–"07:00") in which email and push wait. notification-service decides with
// quietHoursEnd whether a notification was created inside it, and stamps notification.created's
// `quietUntil` with the instant it ends; the senders hold until then. Intl only: the runtime's ICU
// data is the same the contract's `time-zone` format accepts.

import { instantsOf, wallAt } from './local-time';

/** A user's quiet hours: local times "HH:MM" (24 h); `start` > `end` wraps midnight. */
export interface QuietHours {
  start: string;
  end: string;
}

/** "HH:MM", 00:00 to 23:59. */
export const QUIET_TIME_PATTERN = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
const QUIET_TIME = new RegExp(QUIET_TIME_PATTERN);

/**
 * Why a value is not a quiet-hours window, or undefined when it is one: `{ start, end }`, both
 * "HH:MM" (24 h), different (an empty or a whole-day window is a mistake, not a setting).
 */
export function quietHoursIssue(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'quietHours must be an object { "start": "HH:MM", "end": "HH:MM" } or null';
  const extra = Object.keys(value).find((k) => k !== 'start' && k !== 'end');
  if (extra !== undefined) return `unknown field '${extra}' in quietHours (expected only 'start' and 'end')`;
  for (const field of ['start', 'end'] as const) {
    const v = (value as Record<string, unknown>)[field];
    if (typeof v !== 'string' || !QUIET_TIME.test(v))
      return `quietHours.${field} must be a 24-hour local time "HH:MM" (00:00 to 23:59), got ${JSON.stringify(v) ?? 'nothing'}`;
  }
  const { start, end } = value as QuietHours;
  if (start === end) return `quietHours.start and quietHours.end are both ${start}: a window needs two different times`;
  return undefined;
}

function minutesOf(time: string, field: string): number {
  if (!QUIET_TIME.test(time)) throw new RangeError(`quiet hours ${field} ${JSON.stringify(time)} is not "HH:MM"`);
  return Number(time.slice(0, 2)) * 60 + Number(time.slice(3));
}

const DAY_MS = 86_400_000;

/**
 * When the quiet hours around `at` end: null when `at` is outside them (local wall time in
 * `timeZone`, IANA name), else the instant the local clock next reads `quiet.end` (on the next day
 * for a window that wraps midnight and `at` before midnight), DST-correct (local-time.ts). The
 * window includes `start` and excludes `end`. Throws a RangeError for a malformed time or an
 * unknown zone; `start === end` is an empty window (null).
 */
export function quietHoursEnd(at: Date, quiet: QuietHours, timeZone: string): Date | null {
  const start = minutesOf(quiet.start, 'start');
  const end = minutesOf(quiet.end, 'end');
  const ms = at.getTime();
  if (Number.isNaN(ms)) throw new RangeError('quietHoursEnd: invalid date');
  if (start === end) return null;
  const wall = wallAt(ms, timeZone);
  const midnight = Math.floor(wall / DAY_MS) * DAY_MS;
  const minute = Math.floor((wall - midnight) / 60_000);
  const inside = start < end ? minute >= start && minute < end : minute >= start || minute < end;
  if (!inside) return null;
  // Before midnight in a wrapping window, it ends tomorrow; otherwise today.
  const endDay = start > end && minute >= start ? midnight + DAY_MS : midnight;
  // The end's first instant after `at`: in the autumn overlap the window ends at the occurrence
  // still ahead; in the spring gap at the jump (local-time.ts instantsOf).
  const ends = instantsOf(endDay + end * 60_000, timeZone);
  return new Date(ends.find((t) => t > ms) ?? ends[ends.length - 1]);
}
