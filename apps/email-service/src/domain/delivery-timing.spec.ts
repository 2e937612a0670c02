import { holdFor, MAX_QUIET_HOLD_MS } from './delivery-timing';

const at = new Date('2026-12-04T01:00:00.000Z');
const plus = (ms: number) => new Date(at.getTime() + ms);

describe('holdFor', () => {
  it('holds nothing without quiet hours and with delay-then-check off', () => {
    expect(holdFor({ type: 'mention' }, at, 0)).toBeUndefined();
    expect(holdFor({ type: 'mention', quietUntil: plus(-60_000).toISOString() }, at, 0)).toBeUndefined();
    expect(holdFor({ type: 'mention', quietUntil: 'not a date' }, at, 0)).toBeUndefined();
  });

  it('holds until the end of the quiet hours, at most a day', () => {
    expect(holdFor({ type: 'reply', quietUntil: plus(3_600_000).toISOString() }, at, 0)).toEqual({
      until: plus(3_600_000),
      reason: 'quiet_hours',
    });
    expect(holdFor({ type: 'reply', quietUntil: plus(5 * MAX_QUIET_HOLD_MS).toISOString() }, at, 0)?.until).toEqual(
      plus(MAX_QUIET_HOLD_MS),
    );
  });

  it('holds until max(quietUntil, received + delay)', () => {
    expect(holdFor({ type: 'comment' }, at, 120_000)).toEqual({ until: plus(120_000), reason: 'read_check' });
    expect(holdFor({ type: 'comment', quietUntil: plus(60_000).toISOString() }, at, 120_000)).toEqual({
      until: plus(120_000),
      reason: 'read_check',
    });
    expect(holdFor({ type: 'comment', quietUntil: plus(600_000).toISOString() }, at, 120_000)).toEqual({
      until: plus(600_000),
      reason: 'quiet_hours',
    });
  });

  it('never holds a security alert, whatever the event says', () => {
    expect(holdFor({ type: 'security_alert', quietUntil: plus(3_600_000).toISOString() }, at, 120_000)).toBeUndefined();
  });
});
