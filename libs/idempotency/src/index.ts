export { inboxClaimSql } from './inbox';
export { purgeProcessedEvents, MIN_RETENTION_MS, DEFAULT_RETENTION_MS } from './retention';
export type { PurgeOptions } from './retention';
