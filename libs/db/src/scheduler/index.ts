export { createScheduler, JobTimeoutError, SchedulerStoppingError } from './scheduler';
export { LeadershipLostError } from './lock';
export { advisoryLockKey } from './plan';
export { lastJobRuns, lastSucceededRun } from './history';
export type { JobRunRecord } from './history';
export type {
  Attempt,
  JobContext,
  JobCounts,
  RunOnceOptions,
  RunOutcome,
  ScheduledJob,
  Scheduler,
  SchedulerOptions,
  SkipReason,
} from './types';
