import { HandlerTimeoutError } from '../../errors';
import { testDelivery } from '../test-delivery';
import type { Handler, MessageContext } from '../types';
import { deadline } from './deadline';

/**
 * A handler that keeps working: one step every 5 ms, for ever, checking its signal between steps
 * as real work does when it passes the signal to a query or an HTTP call. It does not wait for the
 * abort; only the deadline can stop it. Its steps are global timers, which jest's fake clock drives,
 * so the times it records are the clock's, not the machine's load.
 */
function busyWorker() {
  const work = {
    steps: 0,
    stoppedAt: 0,
    abortedAt: 0,
    reason: undefined as unknown,
    stopped: undefined as Promise<void> | undefined,
  };
  let stop!: () => void;
  work.stopped = new Promise<void>((resolve) => (stop = resolve));
  const handler: Handler<unknown> = async (_e, ctx) => {
    ctx.signal.addEventListener('abort', () => (work.abortedAt = Date.now()));
    try {
      for (;;) {
        ctx.signal.throwIfAborted();
        work.steps += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } catch (err) {
      work.reason = err;
      throw err;
    } finally {
      work.stoppedAt = Date.now();
      stop();
    }
  };
  return { work, handler };
}

describe('deadline', () => {
  afterEach(() => jest.useRealTimers());

  it('aborts the handler’s signal at the deadline, and work that observes it stops there', async () => {
    jest.useFakeTimers();
    const { delivery } = testDelivery();
    const { work, handler } = busyWorker();
    const startedAt = Date.now();
    const outcome = deadline<unknown>(60)(handler)(undefined, delivery.ctx).catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(59);
    expect(work.abortedAt).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(await outcome).toBeInstanceOf(HandlerTimeoutError);
    expect(work.abortedAt - startedAt).toBe(60);
    // The worker notices at its next step, at most one 5 ms step after the abort.
    await jest.advanceTimersByTimeAsync(5);
    await work.stopped;
    expect(work.reason).toBeInstanceOf(HandlerTimeoutError);
    expect(work.stoppedAt - work.abortedAt).toBeLessThanOrEqual(5);
    const steps = work.steps;
    await jest.advanceTimersByTimeAsync(1000);
    expect(work.steps).toBe(steps); // nothing ran after it stopped
    expect(jest.getTimerCount()).toBe(0);
  });

  it('fails at the deadline even when the work ignores its signal', async () => {
    const { delivery } = testDelivery();
    const ignoring: Handler<unknown> = () => new Promise(() => undefined);
    await expect(deadline<unknown>(20)(ignoring)(undefined, delivery.ctx)).rejects.toBeInstanceOf(HandlerTimeoutError);
  });

  it('aborts the handler when the consumer’s shutdown signal fires first', async () => {
    const { delivery, shutdown } = testDelivery();
    const { work, handler } = busyWorker();
    jest.useFakeTimers();
    const running = deadline<unknown>(10_000)(handler)(undefined, delivery.ctx);
    const outcome = running.catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(20);
    expect(work.steps).toBeGreaterThan(1); // working, not yet stopped
    shutdown.abort(new Error('shutdown deadline'));
    // It fails with the worker, which notices at its next step.
    await jest.advanceTimersByTimeAsync(5);
    expect(await outcome).toMatchObject({ message: 'shutdown deadline' });
    await work.stopped;
    expect(work.reason).toMatchObject({ message: 'shutdown deadline' });
    expect(jest.getTimerCount()).toBe(0); // the 10 s deadline timer went with it
  });

  it('passes the outcome of a handler that finishes in time, with its own signal and the rest of the context', async () => {
    const { delivery } = testDelivery();
    let seen: MessageContext | undefined;
    const quick: Handler<unknown> = async (_e, ctx) => {
      seen = ctx;
      return 'skipped';
    };
    await expect(deadline<unknown>(1000)(quick)(undefined, delivery.ctx)).resolves.toBe('skipped');
    expect(seen?.signal).not.toBe(delivery.ctx.signal);
    expect(seen?.signal.aborted).toBe(false);
    expect(seen?.eventId).toBe(delivery.ctx.eventId);
  });
});
