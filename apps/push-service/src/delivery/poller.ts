import type { Logger } from 'pino';
import * as ledger from '../store/ledger';
import { deliver, type DeliverDeps } from './deliver';
import { withoutReadInApp, type ReadState } from './read-check';

export interface PollerOptions {
  deliver: DeliverDeps;
  intervalMs: number;
  leaseMs: number;
  batchSize: number;
  retentionDays: number;
  logger: Logger;
  /** Delay-then-check on (PUSH_READ_CHECK_DELAY_MS > 0): held pushes are checked before their first attempt. */
  readState?: ReadState;
}

/** Retention runs at the first poll and then at most this often. */
const PURGE_EVERY_MS = 600_000;
const PURGE_BATCH = 1_000;

/**
 * The loop every replica runs: claim the ledger rows that are due (a held push whose hold ended,
 * a 429's Retry-After has passed, a 5xx's backoff, a crashed sender's lease), drop those read in
 * the app meanwhile when delay-then-check is on, and send the rest; and, every ten minutes, purge finished
 * rows past retention. One poll at a time; `poll()` is also what tests call.
 */
export class Poller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastPurge = 0;

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.poll()
        .then(() => undefined)
        .catch((err) => this.options.logger.warn({ err }, 'push poll failed; trying again next interval'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.options.intervalMs);
        });
    }, delay);
  }

  /** Claims and sends every due row, batch after batch, then purges when it is time. */
  async poll(): Promise<number> {
    let sent = 0;
    for (;;) {
      if (this.stopped) return sent;
      const { deliver: deps, readState } = this.options;
      const now = deps.now?.() ?? new Date();
      const leases = await ledger.claimDue(deps.pool, this.options.leaseMs, this.options.batchSize, now);
      if (leases.length === 0) break;
      const unread = readState
        ? await withoutReadInApp(
            { readState, pool: deps.pool, metrics: deps.metrics, logger: this.options.logger },
            leases,
          )
        : leases;
      await deliver(deps, unread);
      sent += leases.length;
      if (leases.length < this.options.batchSize) break;
    }
    if (Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      const purged = await ledger.purgeFinished(this.options.deliver.pool, this.options.retentionDays, PURGE_BATCH);
      if (purged > 0) {
        this.options.deliver.metrics.purged.inc(purged);
        this.options.logger.info({ purged }, 'finished push deliveries purged');
      }
    }
    return sent;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
