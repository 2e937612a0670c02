import { FormatRegistry } from '@sinclair/typebox';

// TypeBox ships no string formats: a schema with `format: 'uuid'` fails every value until the
// format is registered. The registry is process-global, so register only what is missing: the
// contract's meaning of these names is the standard one (RFC 4122 / RFC 3339 / HTML email), and a
// second library registering the same standard names must not be silently overridden.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// RFC 3339 date-time with a mandatory offset ("Z" or "+hh:mm"); the calendar check below rejects
// dates such as 2026-02-30 that the regex alone would let through.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):?[0-5]\d)$/i;

// The pragmatic HTML-style address check (same as ajv-formats' "fast" email).
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isUuid(value: string): boolean {
  return UUID.test(value);
}

function isDateTime(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return false;
  if (month === 2 && day === 29) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return true;
}

function isEmail(value: string): boolean {
  return value.length <= 254 && EMAIL.test(value);
}

/**
 * An IANA time zone name ("Asia/Jakarta", "UTC"), as the runtime's ICU data knows it: the zone a
 * formatter accepts is exactly the zone the services can compute local hours in.
 */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

export function isTimeZone(value: string): boolean {
  // A name, not an offset: ICU also accepts "+07:00", which has no daylight-saving rules.
  if (value.length > 64 || !ZONE_NAME.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

function registerFormats(): void {
  if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', isUuid);
  if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', isDateTime);
  if (!FormatRegistry.Has('email')) FormatRegistry.Set('email', isEmail);
  if (!FormatRegistry.Has('time-zone')) FormatRegistry.Set('time-zone', isTimeZone);
}

registerFormats();
