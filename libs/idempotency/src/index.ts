export { withTransaction, isUniqueViolation } from './transaction';
export type { TransactionOptions } from './transaction';
export { claimEvent, claimEvents, inboxClaimSql, runOnce, runBatchOnce } from './inbox';
export type { RunOnceResult, BatchOnceResult } from './inbox';
export { purgeProcessedEvents, MIN_RETENTION_MS, DEFAULT_RETENTION_MS } from './retention';
export type { PurgeOptions } from './retention';
