export { createScheduler, JobTimeoutError, SchedulerStoppingError } from './scheduler';
export { LeadershipLostError } from './lock';
export { advisoryLockKey } from './plan';
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
