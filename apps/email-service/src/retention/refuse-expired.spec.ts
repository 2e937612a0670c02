import { classify, type MessageContext, type PermanentError } from '@community/messaging';
import { refuseExpiredEvents } from './refuse-expired';

const HOUR = 3_600_000;
const now = new Date('2026-12-01T12:00:00Z');
const ctx = {} as MessageContext;
const event = (ageMs: number) => ({ id: 'evt-1', occurredAt: new Date(now.getTime() - ageMs).toISOString() });

describe('refuseExpiredEvents', () => {
  it('passes an event within the acceptance window to the handler', async () => {
    const handler = jest.fn(async () => 'processed' as const);
    const guarded = refuseExpiredEvents(48 * HOUR, () => now)(handler);
    await expect(guarded(event(48 * HOUR), ctx)).resolves.toBe('processed');
    await expect(guarded(event(-5 * 60_000), ctx)).resolves.toBe('processed'); // a clock ahead of ours
    expect(handler).toHaveBeenCalledTimes(2);
  });

  it('dead-letters an older one with EVENT_EXPIRED, without calling the handler', async () => {
    const handler = jest.fn(async () => 'processed' as const);
    const guarded = refuseExpiredEvents(48 * HOUR, () => now)(handler);
    const err = (await guarded(event(48 * HOUR + 1), ctx).catch((e: unknown) => e)) as PermanentError;
    expect(classify(err)).toBe('permanent');
    expect(err.code).toBe('EVENT_EXPIRED');
    expect(err.message).toMatch(/event evt-1 occurred 48 h ago, beyond the 48 h acceptance window/);
    expect(handler).not.toHaveBeenCalled();
  });

  it('refuses an event whose occurredAt cannot be read rather than guess its age', async () => {
    const handler = jest.fn(async () => 'processed' as const);
    await expect(
      refuseExpiredEvents(HOUR, () => now)(handler)({ id: 'x', occurredAt: 'not a date' }, ctx),
    ).rejects.toMatchObject({ code: 'EVENT_EXPIRED' });
    expect(handler).not.toHaveBeenCalled();
  });
});
