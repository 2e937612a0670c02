import { Limiter } from './limiter';

/**
 * Lets every settled job's promise chain run (the limiter starts the next job in a `finally`): the
 * jobs here do no I/O, so one turn of the event loop drains them, however loaded the machine.
 */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Limiter', () => {
  it('runs at most `limit` jobs at once and starts waiting ones in order as slots free', async () => {
    const limiter = new Limiter<number>(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const release = new Map<number, () => void>();
    for (let i = 1; i <= 5; i++) {
      limiter.submit(i, async () => {
        started.push(i);
        running += 1;
        peak = Math.max(peak, running);
        await new Promise<void>((r) => release.set(i, r));
        running -= 1;
      });
    }
    expect(started).toEqual([1, 2]);
    expect(limiter.active).toBe(2);
    release.get(2)!();
    await settle();
    expect(started).toEqual([1, 2, 3]);
    for (const i of [1, 3, 4]) {
      release.get(i)!();
      await settle();
    }
    release.get(5)!();
    await settle();
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(limiter.active).toBe(0);
  });

  it('gives back the jobs that have not started, and never runs them', async () => {
    const limiter = new Limiter<string>(1);
    const ran: string[] = [];
    let release!: () => void;
    limiter.submit('a', async () => {
      ran.push('a');
      await new Promise<void>((r) => (release = r));
    });
    limiter.submit('b', async () => void ran.push('b'));
    limiter.submit('c', async () => void ran.push('c'));
    expect(limiter.drainWaiting()).toEqual(['b', 'c']);
    release();
    await settle();
    expect(ran).toEqual(['a']);
  });

  it('frees the slot of a job that fails', async () => {
    const limiter = new Limiter<number>(1);
    const ran: number[] = [];
    limiter.submit(1, async () => Promise.reject(new Error('boom')));
    limiter.submit(2, async () => void ran.push(2));
    await settle();
    expect(ran).toEqual([2]);
  });
});
