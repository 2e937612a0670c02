import type { SendPriority } from '../domain/lanes';

/**
 * Paces sends to the provider's limit: GCRA (the "virtual scheduling" form of a token bucket),
 * `ratePerSecond` sustained with bursts of at most `burst` messages. Two FIFOs share the one limit:
 * a critical caller (a security alert) takes the next free slot ahead of every regular caller
 * already waiting, so a backlog of other email delays it by at most the slot in progress; within a
 * priority, callers are served in arrival order.
 *
 * Written here rather than using nodemailer's pool `rateLimit`/`rateDelta` because that one is a
 * fixed window checked only when a pooled connection becomes free: every window starts with a
 * burst of the whole quota, and each connection can slip one message past the count. Measured on
 * this machine with 5 connections it sent 115/s at a limit of 100/s and 60/s at 50/s (+15–20 %),
 * which a provider enforcing its limit answers with 4xx. Here the long-run rate is exact and
 * bursts are bounded. (npm has token-bucket packages, but none is installed here, and this is
 * one FIFO and one timer.)
 */
export interface RateLimiter {
  /**
   * Resolves when this send may start; rejects with the signal's reason if aborted first. A
   * critical caller goes ahead of every regular one (the limit itself is shared).
   */
  acquire(signal?: AbortSignal, priority?: SendPriority): Promise<void>;
  /** The configured rate; 0 means unlimited. */
  readonly ratePerSecond: number;
}

/** Documented slack of the schedule: a late timer makes up at most this much of missed slots. */
export const CATCH_UP_MS = 100;

/**
 * Told about every permit and every change of a queue's length, so that the metrics (and a test
 * driving the limiter's clock) see what the limiter did rather than inferring it from send times.
 */
export interface RateLimiterObserver {
  granted(priority: SendPriority): void;
  waiting(priority: SendPriority, count: number): void;
}

interface Waiter {
  arrivedAt: number;
  resolve: () => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export function createRateLimiter(
  ratePerSecond: number,
  burst = 1,
  now: () => number = () => performance.now(),
  observer?: RateLimiterObserver,
): RateLimiter {
  if (ratePerSecond <= 0) {
    return {
      ratePerSecond: 0,
      acquire: async (_signal, priority = 'regular') => {
        observer?.granted(priority);
      },
    };
  }
  const intervalMs = 1000 / ratePerSecond;
  // How far ahead of the theoretical schedule a send may run: (burst - 1) intervals.
  const toleranceMs = (Math.max(1, burst) - 1) * intervalMs;
  // Theoretical arrival time of the next send.
  let tat = -Infinity;
  const waiting: Record<SendPriority, Waiter[]> = { critical: [], regular: [] };
  const head = (): Waiter[] | undefined =>
    waiting.critical.length > 0 ? waiting.critical : waiting.regular.length > 0 ? waiting.regular : undefined;
  let timer: NodeJS.Timeout | undefined;

  // Releases every waiter whose slot has come, then sleeps until the next slot: one timer however
  // many callers wait; critical callers first, each priority in FIFO order. A slot is due from the
  // later of the schedule and the caller's arrival (an idle limiter does not bank slots: bursts
  // stay within `burst`). A timer that fires late (a busy event loop) catches up on the slots it
  // missed, up to CATCH_UP_MS of them, so the long-run rate stays the configured one; a longer
  // stall is not made up for.
  function pump(): void {
    for (let queue = head(); queue !== undefined; queue = head()) {
      const t = now();
      const due = Math.max(tat, queue[0].arrivedAt, t - CATCH_UP_MS);
      const waitMs = due - toleranceMs - t;
      if (waitMs > 0) {
        timer = setTimeout(() => {
          timer = undefined;
          pump();
        }, waitMs);
        // The callers' own work (sockets, handlers) keeps the process alive, not this pacing timer.
        timer.unref();
        return;
      }
      tat = due + intervalMs;
      const w = queue.shift() as Waiter;
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      const priority: SendPriority = queue === waiting.critical ? 'critical' : 'regular';
      observer?.granted(priority);
      observer?.waiting(priority, queue.length);
      w.resolve();
    }
  }

  return {
    ratePerSecond,
    acquire(signal?: AbortSignal, priority: SendPriority = 'regular'): Promise<void> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const queue = waiting[priority];
      return new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { arrivedAt: now(), resolve, signal };
        if (signal) {
          // An aborted caller leaves the queue without using a slot.
          waiter.onAbort = () => {
            const i = queue.indexOf(waiter);
            if (i >= 0) queue.splice(i, 1);
            observer?.waiting(priority, queue.length);
            reject(signal.reason);
          };
          signal.addEventListener('abort', waiter.onAbort, { once: true });
        }
        queue.push(waiter);
        observer?.waiting(priority, queue.length);
        // A running timer needs no reset for a critical arrival: someone waits only while the
        // schedule (tat) is ahead of now, so the next slot is the same for whoever takes it.
        if (timer === undefined) pump();
      });
    },
  };
}
