import type { QueueSpec } from '@community/messaging';
import { loadEmailConfig } from '../config';
import { CLOCK_MARGIN_MS, emailRetentionIssues, emailRetentionPolicy, sendHandlerTimeoutMs } from './policy';

const DAY = 86_400_000;
const defaults = loadEmailConfig({});

describe('email retention policy', () => {
  it('defaults to 30 days, and accepts events up to the horizon less the clock margin and the send deadline', () => {
    const policy = emailRetentionPolicy(defaults);
    expect(policy.retentionMs).toBe(30 * DAY);
    expect(sendHandlerTimeoutMs(defaults)).toBe(600_000 + 2 * 120_000 + 30_000);
    expect(policy.maxEventAgeMs).toBe(30 * DAY - CLOCK_MARGIN_MS - 870_000);
    // email-service.send: 756 s of tiers + 6 attempts × 5 deliveries × 870 s.
    expect(policy.longestRedeliveryMs).toBe(756_000 + 30 * 870_000);
  });

  it('accepts the minimum of 2 days with the default timings', () => {
    expect(emailRetentionIssues({ ...defaults, EMAIL_RETENTION_DAYS: 2 })).toEqual([]);
  });

  it('refuses a horizon whose acceptance window a healthy message could outlast, naming the variable', () => {
    // Longer breaker holds and leases stretch every delivery: 6 × 5 × (20 min + 2 × 15 min + 30 s) ≈ 25.3 h.
    const slow = { ...defaults, EMAIL_RETENTION_DAYS: 2, SMTP_BREAKER_MAX_HOLD_MS: 1_200_000, EMAIL_LEASE_MS: 900_000 };
    const [issue] = emailRetentionIssues(slow);
    expect(issue.name).toBe('EMAIL_RETENTION_DAYS');
    expect(issue.message).toMatch(/^EMAIL_RETENTION_DAYS: 2 days leave an acceptance window of 24 h .* it must exceed 26 h/);
    expect(emailRetentionIssues({ ...slow, EMAIL_RETENTION_DAYS: 3 })).toEqual([]);
    expect(() => loadEmailConfig({ EMAIL_RETENTION_DAYS: '2', SMTP_BREAKER_MAX_HOLD_MS: '20m', EMAIL_LEASE_MS: '15m' })).toThrow(/EMAIL_RETENTION_DAYS: 2 days/);
  });

  it("counts every email-service queue (a second lane of notification.created too), and no other service's", () => {
    const lane = (name: string, retryDelaysMs: number[]): QueueSpec => ({ name, bindings: [], retryDelaysMs, deliveryLimit: 1 });
    const policy = emailRetentionPolicy(defaults, [lane('email-service.send', []), lane('email-service.critical', [5 * DAY]), lane('feed-service.activity', [50 * DAY])]);
    expect(policy.longestRedeliveryMs).toBe(5 * DAY + 2 * 870_000);
    expect(emailRetentionIssues({ ...defaults, EMAIL_RETENTION_DAYS: 6 }, [lane('email-service.critical', [5 * DAY])])).toHaveLength(1);
  });
});
