// Database plumbing for every service: the pool, transactions, SQLSTATE helpers and the LISTEN
// client. Plain node-postgres only; the generated Prisma client has its own entry point
// (`@community/db/prisma`, ./prisma.ts) so that a process which never uses it never loads it.
export { createPgPool, isTransactionPooled, TRANSACTION_POOLER_PARAM } from './pool';
export type { PoolOptions } from './pool';
export { withTransaction } from './transaction';
export type { IsolationLevel, TransactionOptions } from './transaction';
export { isUniqueViolation, sqlState } from './errors';
export { createListenClient } from './listen';
export type { ListenClient, ListenClientOptions, ListenNotification } from './listen';
export { classifyPgError, pgUnavailable } from './classify';
export {
  advisoryLockKey,
  createScheduler,
  JobTimeoutError,
  lastJobRuns,
  lastSucceededRun,
  LeadershipLostError,
  SchedulerStoppingError,
} from './scheduler/index';
export type {
  Attempt,
  JobContext,
  JobCounts,
  JobRunRecord,
  RunOnceOptions,
  RunOutcome,
  ScheduledJob,
  Scheduler,
  SchedulerOptions,
  SkipReason,
} from './scheduler/index';
