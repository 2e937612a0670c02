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
