import { quietHoursEnd, quietHoursIssue } from './quiet-hours';

const end = (at: string, start: string, stop: string, zone: string) =>
  quietHoursEnd(new Date(at), { start, end: stop }, zone)?.toISOString() ?? null;

describe('quietHoursEnd', () => {
  it('UTC, a window that wraps midnight: from start (included) to end (excluded), ending the next morning', () => {
    expect(end('2026-01-10T21:59:59Z', '22:00', '07:00', 'UTC')).toBeNull();
    expect(end('2026-01-10T22:00:00Z', '22:00', '07:00', 'UTC')).toBe('2026-01-11T07:00:00.000Z');
    expect(end('2026-01-10T23:30:00Z', '22:00', '07:00', 'UTC')).toBe('2026-01-11T07:00:00.000Z');
    expect(end('2026-01-11T00:00:00Z', '22:00', '07:00', 'UTC')).toBe('2026-01-11T07:00:00.000Z');
    expect(end('2026-01-11T06:59:59Z', '22:00', '07:00', 'UTC')).toBe('2026-01-11T07:00:00.000Z');
    expect(end('2026-01-11T07:00:00Z', '22:00', '07:00', 'UTC')).toBeNull();
    expect(end('2026-01-11T12:00:00Z', '22:00', '07:00', 'UTC')).toBeNull();
  });

  it('UTC, a window within one day', () => {
    expect(end('2026-01-10T12:59:00Z', '13:00', '14:30', 'UTC')).toBeNull();
    expect(end('2026-01-10T13:45:10Z', '13:00', '14:30', 'UTC')).toBe('2026-01-10T14:30:00.000Z');
    expect(end('2026-01-10T14:30:00Z', '13:00', '14:30', 'UTC')).toBeNull();
  });

  it('Asia/Jakarta (UTC+7, no daylight saving): local times, not UTC ones', () => {
    // 23:00 WIB on 1 June is 16:00 UTC; 07:00 WIB on 2 June is 00:00 UTC.
    expect(end('2026-06-01T16:00:00Z', '22:00', '07:00', 'Asia/Jakarta')).toBe('2026-06-02T00:00:00.000Z');
    expect(end('2026-06-01T23:30:00Z', '22:00', '07:00', 'Asia/Jakarta')).toBe('2026-06-02T00:00:00.000Z');
    expect(end('2026-06-01T14:59:00Z', '22:00', '07:00', 'Asia/Jakarta')).toBeNull(); // 21:59 WIB
    expect(end('2026-06-02T00:00:00Z', '22:00', '07:00', 'Asia/Jakarta')).toBeNull(); // 07:00 WIB
    // 22:00 UTC would be inside a UTC window, but it is 05:00 WIB: outside 12:00-14:00 WIB.
    expect(end('2026-06-01T22:00:00Z', '12:00', '14:00', 'Asia/Jakarta')).toBeNull();
  });

  describe('Europe/Berlin, spring forward (Sunday 29 March 2026, 02:00 CET -> 03:00 CEST at 01:00 UTC)', () => {
    it('a night across the change ends at 07:00 summer time, an hour earlier in UTC than the evening suggests', () => {
      // 23:00 CET on Saturday (22:00 UTC) → 07:00 CEST on Sunday = 05:00 UTC (not 06:00).
      expect(end('2026-03-28T22:00:00Z', '22:00', '07:00', 'Europe/Berlin')).toBe('2026-03-29T05:00:00.000Z');
      // The night before, still winter time on both sides: 07:00 CET = 06:00 UTC.
      expect(end('2026-03-27T22:00:00Z', '22:00', '07:00', 'Europe/Berlin')).toBe('2026-03-28T06:00:00.000Z');
    });

    it('an end inside the skipped hour (02:30 never happens) ends when the clock jumps past it', () => {
      expect(end('2026-03-28T23:30:00Z', '23:00', '02:30', 'Europe/Berlin')).toBe('2026-03-29T01:00:00.000Z');
      expect(end('2026-03-29T00:59:59Z', '23:00', '02:30', 'Europe/Berlin')).toBe('2026-03-29T01:00:00.000Z');
      expect(end('2026-03-29T01:00:00Z', '23:00', '02:30', 'Europe/Berlin')).toBeNull(); // 03:00 CEST, past it
    });

    it('a start inside the skipped hour: the window is open from the jump on', () => {
      expect(end('2026-03-29T00:59:00Z', '02:30', '05:00', 'Europe/Berlin')).toBeNull(); // 01:59 CET
      expect(end('2026-03-29T01:00:00Z', '02:30', '05:00', 'Europe/Berlin')).toBe('2026-03-29T03:00:00.000Z');
    });
  });

  describe('Europe/Berlin, fall back (Sunday 25 October 2026, 03:00 CEST -> 02:00 CET at 01:00 UTC)', () => {
    it('a night across the change ends at 07:00 winter time, an hour later in UTC', () => {
      // 23:00 CEST on Saturday (21:00 UTC) → 07:00 CET on Sunday = 06:00 UTC (not 05:00).
      expect(end('2026-10-24T21:00:00Z', '22:00', '07:00', 'Europe/Berlin')).toBe('2026-10-25T06:00:00.000Z');
    });

    it('an end in the repeated hour: its first occurrence after the instant', () => {
      // 00:30 CEST → the first 02:30 (CEST, 00:30 UTC).
      expect(end('2026-10-24T22:30:00Z', '00:00', '02:30', 'Europe/Berlin')).toBe('2026-10-25T00:30:00.000Z');
      // 02:45 CEST, the first pass: past 02:30, outside.
      expect(end('2026-10-25T00:45:00Z', '00:00', '02:30', 'Europe/Berlin')).toBeNull();
      // 02:10 CET, the second pass: the clock reads 02:30 again at 01:30 UTC.
      expect(end('2026-10-25T01:10:00Z', '00:00', '02:30', 'Europe/Berlin')).toBe('2026-10-25T01:30:00.000Z');
    });
  });

  it('start == end is an empty window; a malformed time or an unknown zone throws', () => {
    expect(end('2026-01-10T22:00:00Z', '22:00', '22:00', 'UTC')).toBeNull();
    expect(() => quietHoursEnd(new Date(), { start: '7:00', end: '08:00' }, 'UTC')).toThrow(RangeError);
    expect(() => quietHoursEnd(new Date(), { start: '07:00', end: '24:00' }, 'UTC')).toThrow(RangeError);
    expect(() => quietHoursEnd(new Date(), { start: '07:00', end: '08:00' }, 'Mars/Olympus_Mons')).toThrow(RangeError);
  });
});

describe('quietHoursIssue', () => {
  it('accepts two different HH:MM times, wrapping or not', () => {
    expect(quietHoursIssue({ start: '22:00', end: '07:00' })).toBeUndefined();
    expect(quietHoursIssue({ start: '00:00', end: '23:59' })).toBeUndefined();
  });

  it('names what is wrong', () => {
    expect(quietHoursIssue('22:00-07:00')).toMatch(/quietHours must be an object/);
    expect(quietHoursIssue([])).toMatch(/quietHours must be an object/);
    expect(quietHoursIssue({ start: '22:00' })).toBe(
      'quietHours.end must be a 24-hour local time "HH:MM" (00:00 to 23:59), got nothing',
    );
    expect(quietHoursIssue({ start: '24:00', end: '07:00' })).toMatch(/^quietHours.start must be .* got "24:00"$/);
    expect(quietHoursIssue({ start: '22:00', end: '7:00' })).toMatch(/^quietHours.end must be/);
    expect(quietHoursIssue({ start: '22:00', end: '07:00', zone: 'UTC' })).toMatch(/unknown field 'zone'/);
    expect(quietHoursIssue({ start: '08:00', end: '08:00' })).toMatch(/both 08:00/);
  });
});
