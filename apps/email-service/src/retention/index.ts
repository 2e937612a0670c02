// Retention of the email tables runs in the reconciler (apps/reconciler, job email-retention);
// this service keeps the other half of the rule: it refuses events older than the horizon, since
// their ledger row may be gone (docs/EMAIL.md, "Retention").
export { CLOCK_MARGIN_MS, emailRetentionIssues, emailRetentionPolicy, sendHandlerTimeoutMs } from './policy';
export type { EmailRetentionPolicy } from './policy';
export { refuseExpiredEvents } from './refuse-expired';
