import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { EmailMetrics } from '../metrics';
import * as instances from '../store/instances';
import type { LeaseHolder } from '../store/ledger';

/** "14:07 UTC": the time a volunteer compares with a clock. */
export const hhmm = (d: Date): string => `${d.toISOString().slice(11, 16)} UTC`;

/**
 * This process as a lease holder: an instance id in email_service_instances, refreshed every
 * `intervalMs`, so that other processes can tell a holder that died (kill -9, OOM, lost node) from
 * one that is slow, and take its leases over at once (docs/EMAIL.md "A dead holder's lease").
 *
 * Each tick also counts the leases of dead holders nobody has taken over yet, and says it where a
 * volunteer looks: one log line when the figure changes, /readyz details, and a gauge. Before the
 * takeover existed those messages waited out EMAIL_LEASE_MS silently.
 */
export class HolderHeartbeat {
  private readonly me: instances.Instance;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private waiting: instances.DeadHolderLeases = { count: 0, until: null, holders: [] };

  constructor(
    private readonly o: { pool: Pool; intervalMs: number; deadAfterMs: number; logger: Logger; metrics: EmailMetrics },
  ) {
    this.me = { id: randomUUID(), host: hostname(), pid: process.pid, deadAfterMs: o.deadAfterMs };
  }

  get id(): string {
    return this.me.id;
  }

  get holder(): LeaseHolder {
    return { id: this.me.id };
  }

  /** Registers before the first claim: a lease must never name a holder that has no heartbeat yet. */
  async start(): Promise<void> {
    await instances.register(this.o.pool, this.me);
    this.o.logger.info(
      { instanceId: this.id, intervalMs: this.o.intervalMs, deadAfterMs: this.o.deadAfterMs },
      'lease holder registered',
    );
    await this.check();
    // Unref'd: the heartbeat never keeps a stopping process alive.
    this.timer = setInterval(() => {
      if (!this.ticking) this.ticking = this.tick().finally(() => (this.ticking = undefined));
    }, this.o.intervalMs).unref();
  }

  /** For /readyz details. */
  describe(): { instanceId: string; waitingOnDeadHolders: { count: number; until: string | null } } {
    return {
      instanceId: this.id,
      waitingOnDeadHolders: { count: this.waiting.count, until: this.waiting.until?.toISOString() ?? null },
    };
  }

  /** After the consumers drained (no lease of ours is left): the row goes, and reads as dead. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
    await instances
      .deregister(this.o.pool, this.id)
      .catch((err: Error) =>
        this.o.logger.warn(
          { err: err.message },
          'could not deregister the lease holder (it reads as dead once its heartbeat ages)',
        ),
      );
  }

  private async tick(): Promise<void> {
    try {
      await instances.beat(this.o.pool, this.me);
      await instances.prune(this.o.pool);
      await this.check();
    } catch (err) {
      // A missed beat is harmless until EMAIL_HOLDER_DEAD_AFTER_MS (3 beats at least): say it.
      this.o.logger.warn({ err: (err as Error).message }, 'lease holder heartbeat failed');
    }
  }

  private async check(): Promise<void> {
    const now = await instances.deadHolderLeases(this.o.pool);
    this.o.metrics.deadHolderLeases.set(now.count);
    if (now.count > 0 && now.count !== this.waiting.count && now.until) {
      this.o.logger.warn(
        { count: now.count, until: now.until.toISOString(), holders: now.holders },
        `${now.count} messages wait for leases of a dead process until ${hhmm(now.until)}; each is taken over at its next delivery`,
      );
    } else if (now.count === 0 && this.waiting.count > 0) {
      this.o.logger.info('no message waits for a dead process any more');
    }
    this.waiting = now;
  }
}
