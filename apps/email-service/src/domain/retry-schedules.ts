import { backoffDelay } from '@community/messaging';

/**
 * Retry delays that are stored in rows (`next_attempt_at`) and shown to operators, so they carry
 * no jitter: `attempts` is the number of attempts made so far (1 after the first failure).
 */

/** Next try of a digest after a transient failure: 30 s, 1 min, 2 min, … capped at 1 h. */
export function digestRetryDelayMs(attempts: number): number {
  return backoffDelay(attempts - 1, { baseMs: 30_000, maxMs: 3_600_000, jitter: 'none' });
}

/** Next push of an opt-out to notification-service after a failure: 10 s, 20 s, 40 s, … capped at 1 h. */
export function optOutSyncRetryDelayMs(attempts: number): number {
  return backoffDelay(attempts - 1, { baseMs: 10_000, maxMs: 3_600_000, jitter: 'none' });
}
