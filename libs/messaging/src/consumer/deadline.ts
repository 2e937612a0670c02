import { HandlerTimeoutError } from '../errors';

/**
 * A handler's deadline. Its AbortSignal is created on first use: a handler that finishes in time
 * without looking at `ctx.signal` never pays for an AbortController, the most expensive allocation
 * on the per-message path. Aborted before anyone asked, the signal is born aborted.
 */
export class Deadline {
  private controller: AbortController | undefined;
  private reason: unknown;
  private done = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.done) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.done) return;
    this.done = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/**
 * Runs `work` with a deadline that aborts at `timeoutMs` (or when `parent` aborts: a forced
 * shutdown), and rejects with HandlerTimeoutError then, even if the work ignores the signal. Work
 * that passes the signal on (to fetch, pg, `setTimeout` from node:timers/promises) or checks it
 * between steps stops there; a late effect of work that ignores it is harmless: the message goes
 * to a retry tier and its second run is absorbed by the handler's idempotency.
 */
export async function withDeadline<T>(
  timeoutMs: number,
  parent: AbortSignal,
  work: (deadline: Deadline) => Promise<T>,
): Promise<T> {
  const deadline = new Deadline();
  const onParentAbort = () => deadline.abort(parent.reason);
  if (parent.aborted) onParentAbort();
  else parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new HandlerTimeoutError(timeoutMs);
      deadline.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([work(deadline), expired]);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onParentAbort);
  }
}
