import { advisoryLockKey, nextWaitMs, validateJobs } from './plan';

const job = (name: string, intervalMs = 1000, timeoutMs?: number) => ({
  name,
  intervalMs,
  timeoutMs,
  run: async () => undefined,
});

describe('advisoryLockKey', () => {
  it('is a stable signed 64-bit integer per name, different between names', () => {
    const key = advisoryLockKey('inbox-retention');
    expect(key).toBe(advisoryLockKey('inbox-retention'));
    expect(key).toMatch(/^-?\d+$/);
    const n = BigInt(key);
    expect(n >= -(2n ** 63n) && n < 2n ** 63n).toBe(true);
    expect(advisoryLockKey('email-retention')).not.toBe(key);
  });

  it('does not change between releases (replicas of two versions must take the same lock)', () => {
    expect(advisoryLockKey('inbox-retention')).toBe('-1823652570398255209');
  });
});

describe('nextWaitMs', () => {
  it('adds up to jitter × interval to the base wait', () => {
    expect(nextWaitMs(500, 1000, 0.1, () => 0)).toBe(500);
    expect(nextWaitMs(500, 1000, 0.1, () => 0.5)).toBe(550);
    expect(nextWaitMs(500, 1000, 0.1, () => 0.999)).toBe(600);
    expect(nextWaitMs(500, 1000, 0, () => 0.9)).toBe(500);
  });

  it('never waits a negative time', () => {
    expect(nextWaitMs(-50, 1000, 0, () => 0)).toBe(0);
  });
});

describe('validateJobs', () => {
  it('accepts distinct, well-named jobs with positive intervals below the history kept', () => {
    expect(() =>
      validateJobs([job('inbox-retention:notification-service'), job('email.retention', 5000, 100)], 10_000),
    ).not.toThrow();
  });

  it('names every problem with the job and the field', () => {
    expect(() =>
      validateJobs([job('Bad Name'), job('a'), job('a'), job('b', 0), job('c', 20_000), job('d', 10, -1)], 10_000),
    ).toThrow(
      /jobs\[0\] \("Bad Name"\)\.name[\s\S]*jobs\[2\] \("a"\)\.name: declared twice[\s\S]*jobs\[3\] \("b"\)\.intervalMs: must be a positive[\s\S]*jobs\[4\] \("c"\)\.intervalMs: must be shorter[\s\S]*jobs\[5\] \("d"\)\.timeoutMs/,
    );
  });
});
