import { isKnownTimeZone, nextLocalTime, previousLocalTime } from './local-time';

const t = (iso: string) => new Date(iso);
const next = (after: string, hour: number, minute: number, zone: string) =>
  nextLocalTime(t(after), hour, minute, zone).toISOString();

describe('nextLocalTime', () => {
  it('UTC: later today, or tomorrow once the time has passed (strictly after)', () => {
    expect(next('2026-12-04T01:00:00.000Z', 8, 0, 'UTC')).toBe('2026-12-04T08:00:00.000Z');
    expect(next('2026-12-04T08:00:00.000Z', 8, 0, 'UTC')).toBe('2026-12-05T08:00:00.000Z');
    expect(next('2026-12-04T23:59:59.999Z', 0, 0, 'UTC')).toBe('2026-12-05T00:00:00.000Z');
    expect(next('2026-12-31T12:00:00.000Z', 8, 30, 'UTC')).toBe('2027-01-01T08:30:00.000Z');
  });

  it('Asia/Jakarta (UTC+7, no DST): the local hour, across the UTC date line', () => {
    expect(next('2026-12-04T00:59:00.000Z', 8, 0, 'Asia/Jakarta')).toBe('2026-12-04T01:00:00.000Z');
    expect(next('2026-12-04T01:00:00.000Z', 8, 0, 'Asia/Jakarta')).toBe('2026-12-05T01:00:00.000Z');
    // 20:00 UTC is 03:00 the next local day: local midnight then is 17:00 UTC that day.
    expect(next('2026-12-04T20:00:00.000Z', 0, 0, 'Asia/Jakarta')).toBe('2026-12-05T17:00:00.000Z');
  });

  it('a spring-forward gap: a skipped time is the moment of the jump; later hours use the new offset', () => {
    // Europe/Berlin, 2026-03-29: 02:00 CET → 03:00 CEST (01:00 UTC).
    expect(next('2026-03-28T12:00:00.000Z', 2, 30, 'Europe/Berlin')).toBe('2026-03-29T01:00:00.000Z');
    expect(next('2026-03-28T12:00:00.000Z', 8, 0, 'Europe/Berlin')).toBe('2026-03-29T06:00:00.000Z');
    expect(next('2026-03-29T06:00:00.000Z', 8, 0, 'Europe/Berlin')).toBe('2026-03-30T06:00:00.000Z');
    expect(next('2026-03-27T12:00:00.000Z', 8, 0, 'Europe/Berlin')).toBe('2026-03-28T07:00:00.000Z');
    // America/New_York, 2026-03-08: 02:00 EST → 03:00 EDT (07:00 UTC).
    expect(next('2026-03-08T00:00:00.000Z', 2, 15, 'America/New_York')).toBe('2026-03-08T07:00:00.000Z');
  });

  it('a fall-back overlap: a repeated time counts once, at its first occurrence', () => {
    // Europe/Berlin, 2026-10-25: 03:00 CEST → 02:00 CET; 02:30 happens at 00:30 and 01:30 UTC.
    expect(next('2026-10-24T12:00:00.000Z', 2, 30, 'Europe/Berlin')).toBe('2026-10-25T00:30:00.000Z');
    expect(next('2026-10-25T00:30:00.000Z', 2, 30, 'Europe/Berlin')).toBe('2026-10-26T01:30:00.000Z');
    expect(next('2026-10-24T12:00:00.000Z', 8, 0, 'Europe/Berlin')).toBe('2026-10-25T07:00:00.000Z');
  });

  it('a day at the local hour is 23 or 25 hours long across the changes, 24 otherwise', () => {
    const lengths: number[] = [];
    let at = t('2026-03-27T12:00:00.000Z');
    for (let i = 0; i < 4; i++) {
      const n = nextLocalTime(at, 8, 0, 'Europe/Berlin');
      if (i > 0) lengths.push((n.getTime() - at.getTime()) / 3_600_000);
      at = n;
    }
    expect(lengths).toEqual([23, 24, 24]);
    const autumn = ['2026-10-23T12:00:00.000Z', '2026-10-24T12:00:00.000Z', '2026-10-25T12:00:00.000Z'].map((after) =>
      nextLocalTime(t(after), 8, 0, 'Europe/Berlin').getTime(),
    );
    expect([(autumn[1] - autumn[0]) / 3_600_000, (autumn[2] - autumn[1]) / 3_600_000]).toEqual([25, 24]);
  });

  it('refuses an unknown zone and out-of-range times', () => {
    expect(() => nextLocalTime(t('2026-12-04T00:00:00Z'), 8, 0, 'Mars/Olympus')).toThrow(RangeError);
    expect(() => nextLocalTime(t('2026-12-04T00:00:00Z'), 24, 0, 'UTC')).toThrow(RangeError);
    expect(() => nextLocalTime(t('2026-12-04T00:00:00Z'), 8, 60, 'UTC')).toThrow(RangeError);
    expect(isKnownTimeZone('Asia/Jakarta')).toBe(true);
    expect(isKnownTimeZone('Mars/Olympus')).toBe(false);
  });
});

describe('previousLocalTime', () => {
  it('is the last occurrence at or before the instant', () => {
    expect(previousLocalTime(t('2026-12-04T01:00:00.000Z'), 8, 0, 'Asia/Jakarta').toISOString()).toBe(
      '2026-12-04T01:00:00.000Z',
    );
    expect(previousLocalTime(t('2026-12-04T00:59:00.000Z'), 8, 0, 'Asia/Jakarta').toISOString()).toBe(
      '2026-12-03T01:00:00.000Z',
    );
    // The day after the spring change began at 07:00 UTC (08:00 CET) and ends at 06:00 UTC (CEST).
    expect(previousLocalTime(t('2026-03-29T05:00:00.000Z'), 8, 0, 'Europe/Berlin').toISOString()).toBe(
      '2026-03-28T07:00:00.000Z',
    );
  });
});
