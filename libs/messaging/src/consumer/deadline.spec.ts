import { HandlerTimeoutError } from '../errors';
import { withDeadline } from './deadline';

/**
 * A wait on the global timer (which jest's fake clock drives; the one of node:timers/promises it
 * does not) that rejects with the signal's reason as soon as the signal aborts, as a query or an
 * HTTP call passed the signal does.
 */
function step(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

describe('withDeadline', () => {
  afterEach(() => jest.useRealTimers());

  it('resolves with the work’s result when it finishes in time, and leaves no listener on the parent', async () => {
    const parent = new AbortController();
    const add = jest.spyOn(parent.signal, 'addEventListener');
    const remove = jest.spyOn(parent.signal, 'removeEventListener');
    await expect(withDeadline(1000, parent.signal, async () => 42)).resolves.toBe(42);
    expect(remove).toHaveBeenCalledTimes(add.mock.calls.length);
  });

  it('aborts the work’s signal with HandlerTimeoutError at the deadline; work passing the signal on stops', async () => {
    jest.useFakeTimers();
    let steps = 0;
    let signalSeen: AbortSignal | undefined;
    let work: Promise<never> | undefined;
    const running = withDeadline(40, new AbortController().signal, ({ signal }) => {
      signalSeen = signal;
      work = (async () => {
        for (;;) {
          await step(5, signal);
          steps += 1;
        }
      })();
      return work;
    });
    const outcome = running.catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(39);
    expect(signalSeen?.aborted).toBe(false); // not a millisecond early
    await jest.advanceTimersByTimeAsync(1);
    expect(await outcome).toBeInstanceOf(HandlerTimeoutError);
    expect(signalSeen?.aborted).toBe(true);
    expect(signalSeen?.reason).toBeInstanceOf(HandlerTimeoutError);
    // The work itself ended with the abort, and takes no further step however long the clock runs.
    await expect(work).rejects.toBeInstanceOf(HandlerTimeoutError);
    const stepsAtDeadline = steps;
    await jest.advanceTimersByTimeAsync(1000);
    expect(steps).toBe(stepsAtDeadline);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('creates the signal only when asked for, born aborted when the deadline already passed', async () => {
    jest.useFakeTimers();
    let late: AbortSignal | undefined;
    let work: Promise<void> | undefined;
    const running = withDeadline(10, new AbortController().signal, (deadline) => {
      work = (async () => {
        await step(30); // ignores the deadline: asks for the signal only after it
        late = deadline.signal;
      })();
      return work;
    });
    const outcome = running.catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(10);
    expect(await outcome).toBeInstanceOf(HandlerTimeoutError);
    expect(late).toBeUndefined();
    await jest.advanceTimersByTimeAsync(20);
    await work;
    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBeInstanceOf(HandlerTimeoutError);
  });

  it('aborts at once when the parent is already aborted', async () => {
    const parent = new AbortController();
    parent.abort(new Error('shutting down'));
    await expect(withDeadline(1000, parent.signal, ({ signal }) => step(500, signal))).rejects.toThrow('shutting down');
  });
});
