import { HandlerTimeoutError } from '../errors';

/**
 * Runs `work` with an AbortSignal that fires at the deadline (or when `parent` aborts: a forced
 * shutdown), and rejects with HandlerTimeoutError then, even if the work ignores the signal. Work
 * that passes the signal on (to fetch, pg, `setTimeout` from node:timers/promises) or checks it
 * between steps stops there; a late effect of work that ignores it is harmless: the message goes
 * to a retry tier and its second run is absorbed by the handler's idempotency.
 */
export async function withDeadline<T>(timeoutMs: number, parent: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  if (parent.aborted) onParentAbort();
  else parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new HandlerTimeoutError(timeoutMs);
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', onParentAbort);
  }
}
