import { longestRedeliveryMs } from './horizon';

describe('longestRedeliveryMs', () => {
  it('adds every retry tier and, per attempt, every delivery running to its deadline', () => {
    // The community topology's tiers (1 s, 5 s, 30 s, 2 min, 10 min), 5 deliveries, a 10 s batch deadline:
    // 756 s of tiers + 6 attempts × 5 deliveries × 10 s.
    expect(
      longestRedeliveryMs({
        retryDelaysMs: [1_000, 5_000, 30_000, 120_000, 600_000],
        deliveryLimit: 5,
        handlerTimeoutMs: 10_000,
      }),
    ).toBe(756_000 + 300_000);
  });

  it('counts at least one delivery per attempt, and works without tiers', () => {
    expect(longestRedeliveryMs({ retryDelaysMs: [], deliveryLimit: 0, handlerTimeoutMs: 2_000 })).toBe(2_000);
  });
});
