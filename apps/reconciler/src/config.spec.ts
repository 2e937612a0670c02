import type { QueueSpec } from '@community/messaging';
import { loadFeedConfig } from '@community/feed-service';
import { inboxRetentionIssues, loadReconcilerConfig } from './config';

describe('reconciler configuration', () => {
  it('listens on 3004 and keeps the retention defaults moved from the services', () => {
    const c = loadReconcilerConfig({});
    expect([
      c.PORT,
      c.INBOX_RETENTION_DAYS,
      c.EMAIL_RETENTION_DAYS,
      c.RETENTION_INTERVAL_MS,
      c.RETENTION_BATCH_SIZE,
    ]).toEqual([3004, 7, 30, 3_600_000, 5_000]);
  });

  it('refuses an inbox horizon that a retry chain outlasts, naming the variable and the queue', () => {
    const slow: QueueSpec = {
      name: 'notification-service.critical',
      bindings: [],
      retryDelaysMs: [86_400_000, 86_400_000],
      deliveryLimit: 5,
    };
    const [issue] = inboxRetentionIssues({ INBOX_RETENTION_DAYS: 2, INBOX_HANDLER_TIMEOUT_MAX_MS: 10_000 }, [slow]);
    expect(issue.message).toMatch(
      /^INBOX_RETENTION_DAYS: 2 days must exceed the longest redelivery of notification-service\.critical \(49 h/,
    );
    expect(inboxRetentionIssues({ INBOX_RETENTION_DAYS: 3, INBOX_HANDLER_TIMEOUT_MAX_MS: 10_000 }, [slow])).toEqual([]);
    // The community topology with email-service's send deadline: 73 h, so 3 days is the least.
    expect(() => loadReconcilerConfig({ INBOX_RETENTION_DAYS: '3' })).toThrow(
      /INBOX_RETENTION_DAYS: 3 days must exceed the longest redelivery of notification-service.critical \(73 h/,
    );
    expect(loadReconcilerConfig({ INBOX_RETENTION_DAYS: '4' }).INBOX_RETENTION_DAYS).toBe(4);
  });

  it('fails fast naming the variable on cross-field mistakes', () => {
    expect(() => loadReconcilerConfig({ COUNTER_RECENT_WINDOW_MS: '30s', COUNTER_RECOUNT_INTERVAL_MS: '1m' })).toThrow(
      /COUNTER_RECENT_WINDOW_MS: 30000 must exceed COUNTER_RECOUNT_INTERVAL_MS/,
    );
    expect(() => loadReconcilerConfig({ RABBITMQ_MANAGEMENT_URL: 'ftp://x' })).toThrow(
      /RABBITMQ_MANAGEMENT_URL: must start with http:\/\/ or https:\/\/ \(its scheme: "ftp:"\)/,
    );
  });

  it("reads feed-service's Redis layout with feed-service's own defaults, and the DLQ follow-ups' defaults", () => {
    const c = loadReconcilerConfig({});
    const f = loadFeedConfig({});
    expect([c.FEED_REDIS_PREFIX, c.FEED_CAP, c.FEED_ACTIVE_WINDOW_DAYS]).toEqual([
      f.FEED_REDIS_PREFIX,
      f.FEED_CAP,
      f.FEED_ACTIVE_WINDOW_DAYS,
    ]);
    expect([c.DLQ_RETENTION_DAYS, c.STATUS_DLQ_MAX]).toEqual([30, 0]);
    expect(() => loadReconcilerConfig({ DLQ_RETENTION_DAYS: '0' })).toThrow(/DLQ_RETENTION_DAYS/);
    expect(() => loadReconcilerConfig({ FEED_CAP: '1' })).toThrow(/FEED_CAP/);
  });
});
