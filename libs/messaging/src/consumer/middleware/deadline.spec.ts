import { setTimeout as sleep } from 'node:timers/promises';
import { HandlerTimeoutError } from '../../errors';
import { testDelivery } from '../test-delivery';
import type { Handler, MessageContext } from '../types';
import { deadline } from './deadline';

/**
 * A handler that keeps working: one step every 5 ms, for ever, checking its signal between steps
 * as real work does when it passes the signal to a query or an HTTP call. It does not wait for the
 * abort; only the deadline can stop it.
 */
function busyWorker() {
  const work = { steps: 0, stoppedAt: 0, abortedAt: 0, reason: undefined as unknown };
  const handler: Handler<unknown> = async (_e, ctx) => {
    ctx.signal.addEventListener('abort', () => (work.abortedAt = performance.now()));
    try {
      for (;;) {
        ctx.signal.throwIfAborted();
        work.steps += 1;
        await sleep(5);
      }
    } catch (err) {
      work.reason = err;
      throw err;
    } finally {
      work.stoppedAt = performance.now();
    }
  };
  return { work, handler };
}

describe('deadline', () => {
  it('aborts the handler’s signal at the deadline, and work that observes it stops there', async () => {
    const { delivery } = testDelivery();
    const { work, handler } = busyWorker();
    const startedAt = performance.now();
    await expect(deadline<unknown>(60)(handler)(undefined, delivery.ctx)).rejects.toBeInstanceOf(HandlerTimeoutError);
    expect(work.abortedAt - startedAt).toBeGreaterThanOrEqual(55);
    await sleep(20); // the worker notices at its next step, after its current 5 ms sleep
    expect(work.reason).toBeInstanceOf(HandlerTimeoutError);
    const steps = work.steps;
    expect(work.stoppedAt).toBeGreaterThan(0);
    expect(work.stoppedAt - work.abortedAt).toBeLessThan(30);
    await sleep(50);
    expect(work.steps).toBe(steps); // nothing ran after it stopped
  });

  it('fails at the deadline even when the work ignores its signal', async () => {
    const { delivery } = testDelivery();
    const ignoring: Handler<unknown> = () => new Promise(() => undefined);
    await expect(deadline<unknown>(20)(ignoring)(undefined, delivery.ctx)).rejects.toBeInstanceOf(HandlerTimeoutError);
  });

  it('aborts the handler when the consumer’s shutdown signal fires first', async () => {
    const { delivery, shutdown } = testDelivery();
    const { work, handler } = busyWorker();
    const running = deadline<unknown>(10_000)(handler)(undefined, delivery.ctx);
    await sleep(20);
    shutdown.abort(new Error('shutdown deadline'));
    await expect(running).rejects.toThrow('shutdown deadline');
    expect(work.stoppedAt).toBeGreaterThan(0);
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
