import { setTimeout as sleep } from 'node:timers/promises';
import { HandlerTimeoutError } from '../errors';
import { withDeadline } from './deadline';

describe('withDeadline', () => {
  it('resolves with the work’s result when it finishes in time, and leaves no listener on the parent', async () => {
    const parent = new AbortController();
    const add = jest.spyOn(parent.signal, 'addEventListener');
    const remove = jest.spyOn(parent.signal, 'removeEventListener');
    await expect(withDeadline(1000, parent.signal, async () => 42)).resolves.toBe(42);
    expect(remove).toHaveBeenCalledTimes(add.mock.calls.length);
  });

  it('aborts the work’s signal with HandlerTimeoutError at the deadline; work passing the signal on stops', async () => {
    let steps = 0;
    let signalSeen: AbortSignal | undefined;
    const work = async ({ signal }: { signal: AbortSignal }) => {
      signalSeen = signal;
      for (;;) {
        await sleep(5, undefined, { signal }); // rejects with AbortError as soon as the signal aborts
        steps += 1;
      }
    };
    await expect(withDeadline(40, new AbortController().signal, work)).rejects.toBeInstanceOf(HandlerTimeoutError);
    expect(signalSeen?.aborted).toBe(true);
    expect(signalSeen?.reason).toBeInstanceOf(HandlerTimeoutError);
    const stepsAtDeadline = steps;
    await sleep(30);
    expect(steps).toBe(stepsAtDeadline);
  });

  it('creates the signal only when asked for, born aborted when the deadline already passed', async () => {
    let late: AbortSignal | undefined;
    await expect(
      withDeadline(10, new AbortController().signal, async (deadline) => {
        await sleep(30);
        late = deadline.signal;
      }),
    ).rejects.toBeInstanceOf(HandlerTimeoutError);
    await sleep(30);
    expect(late?.aborted).toBe(true);
    expect(late?.reason).toBeInstanceOf(HandlerTimeoutError);
  });

  it('aborts at once when the parent is already aborted', async () => {
    const parent = new AbortController();
    parent.abort(new Error('shutting down'));
    await expect(withDeadline(1000, parent.signal, ({ signal }) => sleep(500, undefined, { signal }))).rejects.toThrow();
  });
});
