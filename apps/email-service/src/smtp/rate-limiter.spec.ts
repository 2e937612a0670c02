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
    let t = 0;
    const limiter = createRateLimiter(100, 1, () => t);
    const released: number[] = [];
    for (let i = 0; i < 20; i++) void limiter.acquire().then(() => released.push(t));
    await new Promise((r) => setImmediate(r));
    expect(released).toHaveLength(1);
    t = 50; // the event loop was blocked for 50 ms: the 5 slots it missed go out at once
    await new Promise((r) => setTimeout(r, 30));
    expect(released.length).toBe(6);
    t = 10_000; // blocked for 10 s: only 100 ms of missed slots (10) are made up, not 10 s of them
    await new Promise((r) => setTimeout(r, 30));
    expect(released.length).toBe(6 + 11);
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
