import { QUEUES } from '@community/contracts';

/** The queues this service consumes (named in libs/contracts QUEUES, declared in COMMUNITY_TOPOLOGY). */
export const CRITICAL_QUEUE = QUEUES.notificationCritical;
export const STANDARD_QUEUE = QUEUES.notificationStandard;

/**
 * The batch handler's deadline. A batch transaction takes milliseconds; 10 s is far past any
 * healthy one and still well inside the broker's consumer_timeout. The reconciler's inbox retention
 * horizon check counts with the longest deadline of any consumer (INBOX_HANDLER_TIMEOUT_MAX_MS).
 */
export const BATCH_TIMEOUT_MS = 10_000;

/**
 * How long a batch's transaction may run under a batch deadline of `timeoutMs`: a margin short of
 * it, so the statement is cancelled and rolled back BEFORE the runtime gives up on the handler and
 * frees its concurrency slot (the runtime stops waiting at the deadline, whatever the handler does).
 */
export function transactionBudgetMs(timeoutMs: number): number {
  return timeoutMs - Math.min(1000, Math.floor(timeoutMs / 4));
}
