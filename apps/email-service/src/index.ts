/**
 * email-service's public entry: what code outside the app (the benchmark) builds it from. Everything
 * else under src/ is internal and may change shape without notice.
 */
export { loadEmailConfig } from './config';
export { createComposer } from './delivery/compose';
export { emailMetrics } from './metrics';
export { createEmailService } from './service';
export type { Sender } from './smtp/sender';
export { createSmtpStack } from './smtp/stack';
export { UnsubscribeTokens } from './unsubscribe/token';
export { EMAIL_CONFIG_SPEC } from './config';
export { sendHandlerTimeoutMs } from './retention/policy';
export { DEFAULT_SEND_HANDLER_TIMEOUT_MS } from './retention/deadline';
// The jobs the reconciler schedules over this service's tables (docs/DATABASE.md "Who owns each
// table"): it runs them in its process, and holds none of their SQL.
export { purgeEmailHistory, type EmailHistoryPurgeOptions } from './retention/purge';
export { deadHolderLeases as findDeadHolderLeases, type DeadHolderLeases } from './store/instances';
export { countExpiredLeases, expiredLeasesSql, undecidedNotificationSql, type LeaseRowRef } from './store/lost-work';
// The read the reconciler's GET /v1/admin/why composes (docs/RECONCILER.md "Why").
export { emailFactsFor, type EmailFacts } from './store/why-facts';
// The error catalogue, for the spec that ties every code to docs/ERRORS.md (scripts/dev/error-catalogue.spec.ts).
export { ERRORS } from './http/errors';
