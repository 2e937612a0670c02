import type { Logger } from 'pino';

export interface TickerStep {
  name: string;
  run: (now: Date) => Promise<unknown>;
}

/**
 * Named a ticker, not a scheduler: @community/db's Scheduler runs each job on ONE replica (the
 * holder of its advisory lock); this runs its steps on EVERY replica, which share the rows.
 *
 * The service's periodic work (flush due digest windows, send due digests, push opt-outs), every
 * `intervalMs`, never overlapping itself. Every replica runs it: each step claims its rows with
 * FOR UPDATE SKIP LOCKED, so replicas share the work instead of needing a leader, and a replica
 * that dies mid-step loses nothing (its transaction rolls back, its leases expire).
 *
 * `clock` is injectable so tests can run a tick "tomorrow" without waiting for it.
 */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;

  constructor(
    private readonly options: { intervalMs: number; clock: () => Date; logger: Logger; steps: TickerStep[] },
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Runs every step once, now (or at the given time). Errors are logged, not thrown. */
  async tick(now: Date = this.options.clock()): Promise<void> {
    for (const step of this.options.steps) {
      try {
        await step.run(now);
      } catch (err) {
        this.options.logger.error(
          { step: step.name, err: (err as Error).message },
          'scheduled step failed; retrying next tick',
        );
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick().finally(() => {
        this.running = undefined;
        this.schedule(this.options.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }
}
