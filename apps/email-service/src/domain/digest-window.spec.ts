import { digestKey, nextWindow, windowFor } from './digest-window';

it('aligns daily and hourly windows to UTC; the next window starts where one ends', () => {
  const at = new Date('2026-11-29T10:42:13.123Z');
  expect(windowFor(at, 'daily')).toEqual({
    start: new Date('2026-11-29T00:00:00Z'),
    end: new Date('2026-11-30T00:00:00Z'),
  });
  expect(windowFor(at, 'hourly')).toEqual({
    start: new Date('2026-11-29T10:00:00Z'),
    end: new Date('2026-11-29T11:00:00Z'),
  });
  expect(digestKey('u1', new Date('2026-11-29T00:00:00Z'))).toBe('digest:u1:2026-11-29T00:00:00.000Z');
  expect(nextWindow(new Date('2026-11-30T00:00:00Z'), 'daily')).toEqual({
    start: new Date('2026-11-30T00:00:00Z'),
    end: new Date('2026-12-01T00:00:00Z'),
  });
});

it("daily windows run from the digest hour of the user's time zone to the next, DST-correct; hourly stay UTC", () => {
  const jakarta = { timeZone: 'Asia/Jakarta', hour: 8 };
  // 10:42 UTC is 17:42 in Jakarta: the local day began at 08:00 WIB (01:00 UTC).
  expect(windowFor(new Date('2026-11-29T10:42:00Z'), 'daily', jakarta)).toEqual({
    start: new Date('2026-11-29T01:00:00Z'),
    end: new Date('2026-11-30T01:00:00Z'),
  });
  expect(windowFor(new Date('2026-11-29T00:30:00Z'), 'daily', jakarta).end).toEqual(new Date('2026-11-29T01:00:00Z'));
  // No time zone, or one this runtime does not know: UTC.
  expect(windowFor(new Date('2026-11-29T10:42:00Z'), 'daily', { hour: 8 }).end).toEqual(
    new Date('2026-11-30T08:00:00Z'),
  );
  expect(windowFor(new Date('2026-11-29T10:42:00Z'), 'daily', { timeZone: 'Nowhere/Else', hour: 8 }).end).toEqual(
    new Date('2026-11-30T08:00:00Z'),
  );
  // Berlin's spring change: that local day is 23 hours long, the next one 24.
  const berlin = { timeZone: 'Europe/Berlin', hour: 8 };
  const spring = windowFor(new Date('2026-03-28T12:00:00Z'), 'daily', berlin);
  expect(spring).toEqual({ start: new Date('2026-03-28T07:00:00Z'), end: new Date('2026-03-29T06:00:00Z') });
  expect(nextWindow(spring.end, 'daily', berlin)).toEqual({
    start: new Date('2026-03-29T06:00:00Z'),
    end: new Date('2026-03-30T06:00:00Z'),
  });
  expect(windowFor(new Date('2026-11-29T10:42:13Z'), 'hourly', jakarta)).toEqual({
    start: new Date('2026-11-29T10:00:00Z'),
    end: new Date('2026-11-29T11:00:00Z'),
  });
});
