// The purge of the email tables (purge.ts) is exported from the index and scheduled by the
// reconciler (job retention.email); this service keeps the other half of the rule: it refuses events older than the horizon, since
// their ledger row may be gone (docs/EMAIL.md, "Retention").
export { CLOCK_MARGIN_MS, emailRetentionIssues, emailRetentionPolicy, sendHandlerTimeoutMs } from './policy';
export type { EmailRetentionPolicy } from './policy';
export { refuseExpiredEvents } from './refuse-expired';
