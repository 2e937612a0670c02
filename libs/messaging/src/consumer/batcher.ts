import { Limiter } from './limiter';

/**
 * Collects items until `size` are there or `maxWaitMs` passed since the first, then hands them to
 * `run`, with at most `concurrency` batches running. Buffered (unstarted) items can be taken back
 * at shutdown.
 */
export class Batcher<T> {
  private buffer: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly limiter: Limiter<T[]>;

  constructor(
    private readonly size: number,
    private readonly maxWaitMs: number,
    private readonly concurrency: number,
    /** Runs a batch; calling `release` frees its slot before it settles (BatchContext.release). */
    private readonly run: (items: T[], release: () => void) => Promise<void>,
  ) {
    this.limiter = new Limiter<T[]>(concurrency);
  }

  add(item: T): void {
    this.buffer.push(item);
    if (this.buffer.length >= this.size) this.flush();
    else if (this.buffer.length === 1) this.timer = setTimeout(() => this.flush(), this.maxWaitMs);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    // Every slot busy and the batch not full: keep filling it. Cutting it now would only queue a
    // small batch behind the running ones, and many small transactions are slower than one big one.
    // The batch goes as soon as a slot frees (see below) or it reaches `size`.
    if (this.limiter.active >= this.concurrency && this.buffer.length < this.size) return;
    const items = this.buffer;
    this.buffer = [];
    this.limiter.submit(items, () => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const settled = this.run(items, release).then(
        () => undefined,
        () => undefined,
      );
      // The slot frees when the batch releases it or settles, whichever comes first (the limiter
      // counts it down right after): then send what waited for it. No timer pending means its wait
      // is already over.
      return Promise.race([released, settled]).finally(() => {
        setImmediate(() => {
          if (this.buffer.length > 0 && this.timer === undefined) this.flush();
        });
      });
    });
  }

  /** Everything not yet handed to `run`: the current buffer and batches waiting for a slot. */
  drainBuffered(): T[] {
    clearTimeout(this.timer);
    const items = [...this.buffer, ...this.limiter.drainWaiting().flat()];
    this.buffer = [];
    return items;
  }
}

/** What a batch consumer hands its messages to: a Batcher, or a PartitionedBatcher. */
export interface BatchSink<T> {
  add(item: T): void;
  drainBuffered(): T[];
}

/**
 * A Batcher per lane, `lanes` of them, each running one batch at a time; an item goes to the lane
 * of its key. Items of one key therefore never run in two batches at once (and keep their order
 * within a consumer), so batches that lock rows per key (a recipient's counter row) never wait on
 * each other's locks, while the consumer still runs `lanes` batches in parallel.
 */
export class PartitionedBatcher<T> implements BatchSink<T> {
  private readonly lanes: Batcher<T>[];

  constructor(
    size: number,
    maxWaitMs: number,
    lanes: number,
    private readonly keyOf: (item: T) => string,
    run: (items: T[], release: () => void) => Promise<void>,
  ) {
    this.lanes = Array.from({ length: lanes }, () => new Batcher<T>(size, maxWaitMs, 1, run));
  }

  add(item: T): void {
    this.lanes[laneOf(this.keyOf(item), this.lanes.length)].add(item);
  }

  drainBuffered(): T[] {
    return this.lanes.flatMap((lane) => lane.drainBuffered());
  }
}

/**
 * FNV-1a (32 bit) of the key, modulo the lane count: stable across processes and releases, cheap,
 * and even enough for user ids. Written here because it is four lines; a hashing package would add
 * a dependency for nothing node:crypto's digests would not do slower.
 */
export function laneOf(key: string, lanes: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % lanes;
}
