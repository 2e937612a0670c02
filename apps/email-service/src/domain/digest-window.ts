/**
 * Digest windows: a user's digest collects what happened in one day or hour. Hourly windows are
 * UTC-aligned hours; daily windows run from the user's local digest hour to the next one
 * (DIGEST_LOCAL_HOUR in the user's time zone, DST-correct: 23 or 25 hours across a change), so the
 * digest goes out when their clock reads that hour (docs/EMAIL.md "Delivery timing").
 */
import { compositeKey, isKnownTimeZone, nextLocalTime, previousLocalTime } from '@community/contracts';

export type DigestPeriod = 'daily' | 'hourly';
const PERIOD_MS: Record<DigestPeriod, number> = { daily: 86_400_000, hourly: 3_600_000 };

/** Where a user's daily window starts: the digest hour in their time zone (UTC when unknown). */
export interface LocalDay {
  timeZone?: string | null;
  hour: number;
}

const UTC_MIDNIGHT: LocalDay = { timeZone: 'UTC', hour: 0 };

/** The zone a window is computed in: the user's, or UTC when absent or unknown to this runtime. */
export function zoneOf(local: LocalDay): string {
  return local.timeZone && isKnownTimeZone(local.timeZone) ? local.timeZone : 'UTC';
}

/** The window containing `at`: an hour (UTC-aligned), or the user's local day from the digest hour. */
export function windowFor(at: Date, period: DigestPeriod, local: LocalDay = UTC_MIDNIGHT): { start: Date; end: Date } {
  if (period === 'daily') {
    const zone = zoneOf(local);
    return { start: previousLocalTime(at, local.hour, 0, zone), end: nextLocalTime(at, local.hour, 0, zone) };
  }
  const ms = PERIOD_MS[period];
  const start = Math.floor(at.getTime() / ms) * ms;
  return { start: new Date(start), end: new Date(start + ms) };
}

/**
 * `digest:{userId}:{windowStart ISO}`: the ledger key of the one digest email of a window. The user id
 * is escaped by the contract's key rule; the timestamp, last and of a fixed format, is appended as is.
 */
export function digestKey(userId: string, windowStart: Date): string {
  return `${compositeKey('digest', { userId })}:${windowStart.toISOString()}`;
}

/** The window right after the one ending at `end` (an item that arrives while its window is closing goes there). */
export function nextWindow(
  end: Date,
  period: DigestPeriod,
  local: LocalDay = UTC_MIDNIGHT,
): { start: Date; end: Date } {
  if (period === 'daily') return { start: end, end: nextLocalTime(end, local.hour, 0, zoneOf(local)) };
  return { start: end, end: new Date(end.getTime() + PERIOD_MS[period]) };
}
