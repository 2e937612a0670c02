export { claimEvents, inboxClaim } from './inbox';
export {
  assertInboxRetention,
  countPurgeableProcessedEvents,
  inboxRetentionJob,
  purgeProcessedEvents,
  MIN_RETENTION_MS,
  DEFAULT_RETENTION_MS,
} from './retention';
export type { InboxRetentionJobOptions, PurgeOptions } from './retention';
export { longestRedeliveryMs } from './horizon';
export { processedAtBy } from './processed';
export type { RedeliveryPath } from './horizon';
export { processedEventsOf, type ProcessedEvent } from './why-facts';
export { notProcessedSql } from './inspect';
