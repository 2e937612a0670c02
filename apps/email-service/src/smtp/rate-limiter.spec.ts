import { createRateLimiter } from './rate-limiter';

describe('rate limiter', () => {
  afterEach(() => jest.useRealTimers());

  it('releases exactly the configured rate, in arrival order, however many wait', async () => {
    jest.useFakeTimers();
    const limiter = createRateLimiter(200, 1, () => Date.now());
    const order: number[] = [];
    for (let i = 0; i < 1000; i++) void limiter.acquire().then(() => order.push(i));
    await jest.advanceTimersByTimeAsync(1000);
    expect(order).toHaveLength(201); // t = 0, then one every 5 ms
    expect(order).toEqual([...order].sort((x, y) => x - y));
    await jest.advanceTimersByTimeAsync(4000);
    expect(order).toHaveLength(1000);
  });

  it('catches up after a late timer (busy event loop), by at most 100 ms of slots', async () => {
    // The limiter's clock (t) and its timers move separately: t jumps while the (fake) timer is
    // held back, as when a busy event loop fires it late.
    jest.useFakeTimers();
    let t = 0;
    const limiter = createRateLimiter(100, 1, () => t);
    const released: number[] = [];
    for (let i = 0; i < 20; i++) void limiter.acquire().then(() => released.push(t));
    await jest.advanceTimersByTimeAsync(0);
    expect(released).toHaveLength(1);
    t = 50; // the event loop was blocked for 50 ms: the 5 slots it missed go out at once
    await jest.advanceTimersByTimeAsync(10); // the pending 10 ms timer fires (late, by t)
    expect(released.length).toBe(6);
    t = 10_000; // blocked for 10 s: only 100 ms of missed slots (10) are made up, not 10 s of them
    await jest.advanceTimersByTimeAsync(10);
    expect(released.length).toBe(6 + 11);
  });

  it('reports each permit and each queue length to its observer, by priority', async () => {
    jest.useFakeTimers();
    let t = 0;
    const granted: string[] = [];
    const waiting: Record<string, number> = {};
    const limiter = createRateLimiter(10, 1, () => t, {
      granted: (p) => granted.push(p),
      waiting: (p, n) => (waiting[p] = n),
    });
    await limiter.acquire();
    expect(granted).toEqual(['regular']);
    const regular = [limiter.acquire(undefined, 'regular'), limiter.acquire(undefined, 'regular')];
    const controller = new AbortController();
    const critical = limiter.acquire(controller.signal, 'critical');
    expect(waiting).toEqual({ regular: 2, critical: 1 });
    controller.abort(new Error('deadline'));
    await expect(critical).rejects.toThrow('deadline');
    expect(waiting).toEqual({ regular: 2, critical: 0 }); // an aborted wait is no longer counted, nor granted
    t = 100;
    await jest.advanceTimersByTimeAsync(100);
    await regular[0];
    expect(granted).toEqual(['regular', 'regular']);
    expect(waiting).toEqual({ regular: 1, critical: 0 });
    const unlimited: string[] = [];
    await createRateLimiter(0, 1, undefined, { granted: (p) => unlimited.push(p), waiting: () => undefined }).acquire(
      undefined,
      'critical',
    );
    expect(unlimited).toEqual(['critical']);
  });

  it('allows a burst, and an aborted wait rejects', async () => {
    let t = 0;
    const limiter = createRateLimiter(10, 5, () => t);
    for (let i = 0; i < 5; i++) await limiter.acquire(); // the burst passes at once
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
    t = 10_000;
    await expect(limiter.acquire()).resolves.toBeUndefined();
    expect(createRateLimiter(0).ratePerSecond).toBe(0);
  });
});

describe('rate limiter priorities', () => {
  afterEach(() => jest.useRealTimers());

  it('a critical caller takes the next slot ahead of a regular backlog, within the same limit', async () => {
    jest.useFakeTimers();
    const limiter = createRateLimiter(10, 1, () => Date.now());
    const released: Array<{ who: string; at: number }> = [];
    const start = Date.now();
    for (let i = 0; i < 50; i++)
      void limiter.acquire(undefined, 'regular').then(() => released.push({ who: `r${i}`, at: Date.now() - start }));
    await jest.advanceTimersByTimeAsync(250); // r0 at 0, r1 at 100, r2 at 200
    void limiter.acquire(undefined, 'critical').then(() => released.push({ who: 'alert', at: Date.now() - start }));
    await jest.advanceTimersByTimeAsync(100);
    // The alert got the slot at 300 ms, ahead of 47 regular callers that arrived before it.
    expect(released.map((r) => r.who)).toEqual(['r0', 'r1', 'r2', 'alert']);
    expect(released[3].at).toBe(300);
    await jest.advanceTimersByTimeAsync(10_000);
    // The shared limit holds: 51 releases, one every 100 ms.
    expect(released).toHaveLength(51);
    for (let i = 1; i < released.length; i++) expect(released[i].at - released[i - 1].at).toBe(100);
  });

  it('an aborted critical caller leaves its queue without using a slot', async () => {
    let t = 0;
    const limiter = createRateLimiter(10, 1, () => t);
    await limiter.acquire();
    const controller = new AbortController();
    const critical = limiter.acquire(controller.signal, 'critical');
    const regular = limiter.acquire(undefined, 'regular');
    controller.abort(new Error('deadline'));
    await expect(critical).rejects.toThrow('deadline');
    t = 100;
    await expect(regular).resolves.toBeUndefined();
  });
});
