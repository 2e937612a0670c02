// Local wall-clock times in a user's IANA time zone (docs/EMAIL.md "Delivery timing"): the daily
// digest goes out when the user's clock reads the digest hour. Intl only, DST-correct; the same
// conventions as quietHoursEnd (quiet-hours.ts): a wall time that occurs twice (the autumn hour)
// is its first occurrence, one that does not occur (the spring gap) is the instant the clock jumps
// past it.

const DAY_MS = 86_400_000;
const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    // Throws a RangeError for an unknown zone.
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** Whether `timeZone` is an IANA zone this runtime knows ("Asia/Jakarta", "UTC"). */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    formatOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The local wall clock at instant `ms` (whole seconds), as Date.UTC of its fields. Throws a RangeError for an unknown zone. */
export function wallAt(ms: number, timeZone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatOf(timeZone).formatToParts(new Date(Math.floor(ms / 1000) * 1000)))
    if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
}

const offsetAt = (ms: number, timeZone: string) => wallAt(ms, timeZone) - Math.floor(ms / 1000) * 1000;

/**
 * The instants at which the local clock reads `wall` (Date.UTC of the local fields), earliest first:
 * one, or two in an overlap (the autumn hour); in a gap (the spring hour), the one instant the clock
 * jumps past it. Shared with quiet-hours.ts.
 */
export function instantsOf(wall: number, timeZone: string): number[] {
  const offsets = new Set([
    offsetAt(wall - DAY_MS, timeZone),
    offsetAt(wall, timeZone),
    offsetAt(wall + DAY_MS, timeZone),
  ]);
  const exact = [...offsets]
    .map((o) => wall - o)
    .filter((t) => offsetAt(t, timeZone) === wall - t)
    .sort((a, b) => a - b);
  if (exact.length > 0) return exact;
  // A gap: the first second whose wall clock is at or past `wall`.
  let lo = Math.floor((wall - Math.max(...offsets)) / 1000);
  let hi = Math.ceil((wall - Math.min(...offsets)) / 1000);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallAt(mid * 1000, timeZone) >= wall) hi = mid;
    else lo = mid;
  }
  return [hi * 1000];
}

/**
 * The first instant strictly after `after` at which the local clock of `timeZone` reads
 * `hour`:`minute` (DST: an hour that occurs twice counts once, at its first occurrence; one that
 * is skipped is the moment of the jump). Throws a RangeError for an unknown zone or an hour or
 * minute out of range.
 */
export function nextLocalTime(after: Date, hour: number, minute: number, timeZone: string): Date {
  if (!Number.isInteger(hour) || hour < 0 || hour > 23)
    throw new RangeError(`nextLocalTime: hour ${hour} is not 0..23`);
  if (!Number.isInteger(minute) || minute < 0 || minute > 59)
    throw new RangeError(`nextLocalTime: minute ${minute} is not 0..59`);
  const ms = after.getTime();
  if (Number.isNaN(ms)) throw new RangeError('nextLocalTime: invalid date');
  const today = Math.floor(wallAt(ms, timeZone) / DAY_MS) * DAY_MS;
  for (let day = -1; day <= 2; day++) {
    const t = instantsOf(today + day * DAY_MS + hour * 3_600_000 + minute * 60_000, timeZone)[0];
    if (t > ms) return new Date(t);
  }
  throw new Error(`nextLocalTime: no ${hour}:${minute} after ${after.toISOString()} in ${timeZone}`);
}

/**
 * The last instant at or before `at` at which the local clock read `hour`:`minute` (the start of a
 * local day that begins then): the counterpart of nextLocalTime.
 */
export function previousLocalTime(at: Date, hour: number, minute: number, timeZone: string): Date {
  const next = nextLocalTime(at, hour, minute, timeZone);
  // Local days last 23 to 25 hours: the occurrence before `next` is found from a day and a half earlier.
  let prev = nextLocalTime(new Date(next.getTime() - 36 * 3_600_000), hour, minute, timeZone);
  for (;;) {
    const n = nextLocalTime(prev, hour, minute, timeZone);
    if (n.getTime() >= next.getTime()) return prev;
    prev = n;
  }
}
