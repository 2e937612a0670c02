/**
 * A concurrency gate whose waiting jobs can be taken back. Hand-written rather than p-limit because
 * graceful shutdown must return unstarted messages to the broker, which needs access to the queue
 * of not-yet-started jobs (p-limit only offers clearQueue(), which forgets them).
 */
export class Limiter<T> {
  private running = 0;
  private readonly waiting: Array<{ item: T; run: () => Promise<void> }> = [];

  constructor(private readonly limit: number) {}

  /** Runs `run` now or when a slot frees. */
  submit(item: T, run: () => Promise<void>): void {
    if (this.running < this.limit) this.start(run);
    else this.waiting.push({ item, run });
  }

  /** Removes and returns everything that has not started. */
  drainWaiting(): T[] {
    return this.waiting.splice(0).map((w) => w.item);
  }

  get active(): number {
    return this.running;
  }

  private start(run: () => Promise<void>): void {
    this.running += 1;
    run()
      .catch(() => undefined) // callers handle their own errors; never an unhandled rejection
      .finally(() => {
        this.running -= 1;
        const next = this.waiting.shift();
        if (next) this.start(next.run);
      });
  }
}
