import { retryDelayMs } from './relay';

describe('retryDelayMs', () => {
  it('doubles from 0.5 s per failed attempt, with jitter in the upper half, capped at 60 s', () => {
    for (let i = 0; i < 200; i++) {
      const first = retryDelayMs(1);
      expect(first).toBeGreaterThanOrEqual(250);
      expect(first).toBeLessThanOrEqual(500);
      const fourth = retryDelayMs(4);
      expect(fourth).toBeGreaterThanOrEqual(2000);
      expect(fourth).toBeLessThanOrEqual(4000);
      expect(retryDelayMs(50)).toBeLessThanOrEqual(60_000);
      expect(retryDelayMs(50)).toBeGreaterThanOrEqual(30_000);
    }
  });
});
