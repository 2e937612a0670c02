import { Batcher } from './batcher';

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

  it('gives back everything not yet started', async () => {
    const b = new Batcher<number>(2, 1000, 1, () => new Promise(() => undefined));
    [1, 2, 3, 4, 5].forEach((i) => b.add(i));
    // [1,2] runs, [3,4] waits for the slot, 5 is in the buffer
    expect(b.drainBuffered().sort()).toEqual([3, 4, 5]);
  });
});
