import { DEFAULT_DELIVERY_LIMIT, type QueueSpec } from '@community/messaging';
import { loadEmailConfig } from '../config';
import { CLOCK_MARGIN_MS, emailRetentionIssues, emailRetentionPolicy, sendHandlerTimeoutMs } from './policy';
import { DEFAULT_SEND_HANDLER_TIMEOUT_MS } from './deadline';

const DAY = 86_400_000;
const defaults = loadEmailConfig({});

describe('email retention policy', () => {
  it('defaults to 30 days, and accepts events up to the horizon less the clock margin and the send deadline', () => {
    const policy = emailRetentionPolicy(defaults);
    expect(policy.retentionMs).toBe(30 * DAY);
    expect(sendHandlerTimeoutMs(defaults)).toBe(600_000 + 2 * 120_000 + 30_000);
    // The default of the reconciler's INBOX_HANDLER_TIMEOUT_MAX_MS.
    expect(DEFAULT_SEND_HANDLER_TIMEOUT_MS).toBe(sendHandlerTimeoutMs(defaults));
    expect(policy.maxEventAgeMs).toBe(30 * DAY - CLOCK_MARGIN_MS - 870_000);
    // email-service.send: 756 s of tiers + 6 attempts × 50 deliveries (the runtime's default
    // delivery limit) × 870 s ≈ 73 h.
    expect(DEFAULT_DELIVERY_LIMIT).toBe(50);
    expect(policy.longestRedeliveryMs).toBe(756_000 + 6 * 50 * 870_000);
  });

  it('with the default timings, accepts 5 days and refuses 4 (an acceptance window of 71.8 h < 73 h)', () => {
    expect(emailRetentionIssues({ ...defaults, EMAIL_RETENTION_DAYS: 5 })).toEqual([]);
    expect(emailRetentionIssues({ ...defaults, EMAIL_RETENTION_DAYS: 4 })).toHaveLength(1);
    expect(() => loadEmailConfig({ EMAIL_RETENTION_DAYS: '2' })).toThrow(
      /EMAIL_RETENTION_DAYS: 2 days .* it must exceed 73 h/,
    );
  });

  it('refuses a horizon whose acceptance window a healthy message could outlast, naming the variable', () => {
    // Longer breaker holds and leases stretch every delivery: 6 × 50 × (20 min + 2 × 15 min + 30 s) ≈ 253 h.
    const slow = {
      ...defaults,
      EMAIL_RETENTION_DAYS: 11,
      SMTP_BREAKER_MAX_HOLD_MS: 1_200_000,
      EMAIL_LEASE_MS: 900_000,
    };
    const [issue] = emailRetentionIssues(slow);
    expect(issue.name).toBe('EMAIL_RETENTION_DAYS');
    expect(issue.message).toMatch(
      /^EMAIL_RETENTION_DAYS: 11 days leave an acceptance window of 240 h .* it must exceed 253 h/,
    );
    expect(emailRetentionIssues({ ...slow, EMAIL_RETENTION_DAYS: 12 })).toEqual([]);
    expect(() =>
      loadEmailConfig({ EMAIL_RETENTION_DAYS: '11', SMTP_BREAKER_MAX_HOLD_MS: '20m', EMAIL_LEASE_MS: '15m' }),
    ).toThrow(/EMAIL_RETENTION_DAYS: 11 days/);
  });

  it("counts every email-service queue (a second lane of notification.created too), and no other service's", () => {
    const lane = (name: string, retryDelaysMs: number[]): QueueSpec => ({
      name,
      bindings: [],
      retryDelaysMs,
      deliveryLimit: 1,
    });
    const policy = emailRetentionPolicy(defaults, [
      lane('email-service.send', []),
      lane('email-service.critical', [5 * DAY]),
      lane('feed-service.activity', [50 * DAY]),
    ]);
    expect(policy.longestRedeliveryMs).toBe(5 * DAY + 2 * 870_000);
    expect(
      emailRetentionIssues({ ...defaults, EMAIL_RETENTION_DAYS: 6 }, [lane('email-service.critical', [5 * DAY])]),
    ).toHaveLength(1);
  });
});
