/**
 * The one exponential-backoff rule of the project: `base * 2^attempt`, capped at `max`, then jittered.
 *
 * - `full` (the default): uniform in [0, ceiling]. Replicas that failed together spread out the most;
 *   use it for reconnect loops and probes.
 * - `equal`: uniform in [ceiling/2, ceiling]. Never retries almost at once; use it when an immediate
 *   retry is wasted work (a row that just failed).
 * - `none`: exactly the ceiling. For delays that are stored and shown to operators (`next_attempt_at`).
 *
 * `attempt` counts from 0 (the first retry waits about `baseMs`). Why not a library: the packages that
 * exist (`exponential-backoff`, `p-retry`) wrap a retry loop around a function, while most callers here
 * need the delay itself: to store it in a row, or to sleep inside a loop they already own.
 * Sleeping is `setTimeout` from `node:timers/promises`, which takes an AbortSignal.
 */
export type Jitter = 'full' | 'equal' | 'none';

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  jitter?: Jitter;
  /** For tests: a source of uniform numbers in [0, 1). */
  random?: () => number;
}

export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const { baseMs, maxMs, jitter = 'full', random = Math.random } = options;
  // 2^31 is already far beyond any cap; clamping keeps the arithmetic finite.
  const exponent = Math.min(Math.max(0, Math.floor(attempt)), 31);
  const ceiling = Math.min(maxMs, baseMs * 2 ** exponent);
  switch (jitter) {
    case 'none':
      return ceiling;
    case 'equal':
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    case 'full':
      return Math.round(random() * ceiling);
  }
}
