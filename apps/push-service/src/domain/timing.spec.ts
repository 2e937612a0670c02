import { holdUntil, MAX_QUIET_HOLD_MS, needsReadCheck } from './timing';

const received = new Date('2026-12-04T22:30:00.000Z');
const at = (iso: string) => new Date(iso);

it('is due at once without quiet hours or a read-check delay', () => {
  expect(holdUntil({ type: 'mention' }, received, 0)).toBeUndefined();
  // A quietUntil that has passed already holds nothing.
  expect(holdUntil({ type: 'mention', quietUntil: '2026-12-04T22:00:00.000Z' }, received, 0)).toBeUndefined();
});

it('waits for the end of the quiet hours', () => {
  expect(holdUntil({ type: 'reply', quietUntil: '2026-12-05T07:00:00.000Z' }, received, 0)).toEqual(
    at('2026-12-05T07:00:00.000Z'),
  );
});

it('honours at most a day of quiet hours', () => {
  expect(holdUntil({ type: 'reply', quietUntil: '2026-12-09T07:00:00.000Z' }, received, 0)).toEqual(
    new Date(received.getTime() + MAX_QUIET_HOLD_MS),
  );
});

it('with delay-then-check: the later of the quiet hours and arrival plus the delay', () => {
  expect(holdUntil({ type: 'mention' }, received, 60_000)).toEqual(at('2026-12-04T22:31:00.000Z'));
  expect(holdUntil({ type: 'mention', quietUntil: '2026-12-05T07:00:00.000Z' }, received, 60_000)).toEqual(
    at('2026-12-05T07:00:00.000Z'),
  );
  expect(holdUntil({ type: 'mention', quietUntil: '2026-12-04T22:30:30.000Z' }, received, 60_000)).toEqual(
    at('2026-12-04T22:31:00.000Z'),
  );
});

it('never holds a security alert', () => {
  expect(
    holdUntil({ type: 'security_alert', quietUntil: '2026-12-05T07:00:00.000Z' }, received, 60_000),
  ).toBeUndefined();
});

it('checks the read state before the first attempt of anything but a security alert', () => {
  expect(needsReadCheck({ notificationType: 'mention', attempts: 1 })).toBe(true);
  expect(needsReadCheck({ notificationType: 'mention', attempts: 2 })).toBe(false);
  expect(needsReadCheck({ notificationType: 'security_alert', attempts: 1 })).toBe(false);
});
