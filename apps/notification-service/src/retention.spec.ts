import type { QueueSpec } from '@community/messaging';
import { loadNotificationConfig } from './config';
import { CRITICAL_QUEUE } from './queues';
import { inboxRetentionIssues } from './retention';

describe('inbox retention configuration', () => {
  it('defaults to 7 days, hourly, 5,000 rows per statement', () => {
    const config = loadNotificationConfig({});
    expect([config.INBOX_RETENTION_DAYS, config.RETENTION_INTERVAL_MS, config.RETENTION_BATCH_SIZE]).toEqual([7, 3_600_000, 5_000]);
  });

  it('refuses a horizon under a day, naming the variable', () => {
    expect(() => loadNotificationConfig({ INBOX_RETENTION_DAYS: '0' })).toThrow(/INBOX_RETENTION_DAYS/);
  });

  it('accepts the community topology with the minimum of one day', () => {
    expect(inboxRetentionIssues({ INBOX_RETENTION_DAYS: 1 })).toEqual([]);
  });

  it('refuses a horizon that a retry chain outlasts, naming the variable and the queue', () => {
    const slowTiers: QueueSpec = { name: CRITICAL_QUEUE, bindings: [], retryDelaysMs: [86_400_000, 86_400_000], deliveryLimit: 5 };
    const [issue] = inboxRetentionIssues({ INBOX_RETENTION_DAYS: 2 }, [slowTiers], 10_000);
    expect(issue.name).toBe('INBOX_RETENTION_DAYS');
    expect(issue.message).toMatch(/INBOX_RETENTION_DAYS: 2 days must exceed the longest redelivery of notification-service\.critical \(2883 min/);
    expect(inboxRetentionIssues({ INBOX_RETENTION_DAYS: 3 }, [slowTiers], 10_000)).toEqual([]);
  });
});
