import { backoffDelay } from './backoff';

describe('backoffDelay', () => {
  const top = () => 0.999999;
  const bottom = () => 0;

  it('doubles from the base and stops at the cap', () => {
    const delays = [0, 1, 2, 3, 10, 100].map((a) => backoffDelay(a, { baseMs: 100, maxMs: 1_000, jitter: 'none' }));
    expect(delays).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('full jitter spans [0, ceiling]', () => {
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, random: bottom })).toBe(0);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, random: top })).toBe(800);
  });

  it('equal jitter never goes below half the ceiling', () => {
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, jitter: 'equal', random: bottom })).toBe(400);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, jitter: 'equal', random: top })).toBe(800);
  });

  it('treats negative, fractional and huge attempts sanely', () => {
    expect(backoffDelay(-5, { baseMs: 250, maxMs: 30_000, jitter: 'none' })).toBe(250);
    expect(backoffDelay(2.7, { baseMs: 250, maxMs: 30_000, jitter: 'none' })).toBe(1_000);
    expect(backoffDelay(1e9, { baseMs: 250, maxMs: 30_000, jitter: 'none' })).toBe(30_000);
  });
});
