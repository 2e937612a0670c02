import { Batcher, laneOf, PartitionedBatcher } from './batcher';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Batcher', () => {
  it('flushes at size, or after maxWait', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number>(3, 20, 1, async (items) => void batches.push(items));
    [1, 2, 3, 4].forEach((i) => b.add(i));
    expect(batches).toEqual([[1, 2, 3]]);
    await tick(40);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('keeps filling while every slot is busy, then sends one batch instead of many small ones', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const b = new Batcher<number>(100, 5, 1, async (items) => {
      batches.push(items);
      if (batches.length === 1) await new Promise<void>((r) => (release = r));
    });
    b.add(0);
    await tick(10); // first batch [0] running, holds the only slot
    for (let i = 1; i <= 10; i++) {
      b.add(i);
      await tick(2); // several maxWait periods pass while the slot is busy
    }
    expect(batches).toHaveLength(1);
    release();
    await tick(5);
    expect(batches).toEqual([[0], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]);
  });

  it('starts the next batch once the running one releases its slot, before it settles', async () => {
    const started: number[][] = [];
    const settle: Array<() => void> = [];
    const b = new Batcher<number>(2, 1000, 1, (items, release) => {
      started.push(items);
      if (items[0] === 1) release(); // its exclusive part is over; it keeps running
      return new Promise<void>((r) => settle.push(r));
    });
    [1, 2, 3, 4, 5, 6].forEach((i) => b.add(i));
    await tick(5);
    // [1,2] released at once: [3,4] started beside it; [3,4] did not release, so [5,6] waits.
    expect(started).toEqual([
      [1, 2],
      [3, 4],
    ]);
    settle[1]();
    await tick(5);
    expect(started).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
  });

  it('gives back everything not yet started', async () => {
    const b = new Batcher<number>(2, 1000, 1, () => new Promise(() => undefined));
    [1, 2, 3, 4, 5].forEach((i) => b.add(i));
    // [1,2] runs, [3,4] waits for the slot, 5 is in the buffer
    expect(b.drainBuffered().sort()).toEqual([3, 4, 5]);
  });
});

describe('PartitionedBatcher', () => {
  it('never runs one key in two batches at once, and runs other keys beside it', async () => {
    const running = new Map<string, number>(); // key -> batches holding it now
    let overlap = 0;
    let parallel = 0;
    let inFlight = 0;
    const releases: Array<() => void> = [];
    const keys = ['ana', 'budi', 'citra', 'dewi', 'eko', 'fajar'];
    const b = new PartitionedBatcher<{ key: string; n: number }>(
      3,
      1,
      2,
      (item) => item.key,
      async (items) => {
        inFlight++;
        parallel = Math.max(parallel, inFlight);
        const held = [...new Set(items.map((i) => i.key))];
        for (const k of held) {
          if ((running.get(k) ?? 0) > 0) overlap++;
          running.set(k, (running.get(k) ?? 0) + 1);
        }
        await new Promise<void>((r) => releases.push(r));
        for (const k of held) running.set(k, (running.get(k) ?? 1) - 1);
        inFlight--;
      },
    );
    for (let n = 0; n < 60; n++) b.add({ key: keys[n % keys.length], n });
    // Release batches one by one until every item has run.
    let ran = 0;
    while (ran < 25) {
      await tick(3);
      const r = releases.shift();
      if (!r) break;
      r();
      ran++;
    }
    expect(overlap).toBe(0);
    expect(parallel).toBe(2); // both lanes busy at once: the partitioning did not serialise everything
  });

  it('puts a key in the same lane every time, spread over the lanes', () => {
    expect(laneOf('user-42', 4)).toBe(laneOf('user-42', 4));
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[laneOf(`user-${i}`, 4)]++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it('gives back what no lane started', async () => {
    const b = new PartitionedBatcher<string>(
      2,
      1000,
      2,
      (k) => k,
      () => new Promise(() => undefined),
    );
    ['a', 'a', 'a', 'a', 'a'].forEach((k) => b.add(k));
    // one lane: [a,a] runs, [a,a] waits for it, one a is buffered
    expect(b.drainBuffered()).toEqual(['a', 'a', 'a']);
  });
});
