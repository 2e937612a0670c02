import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { backoffDelay } from '@community/messaging';
import { redactString } from '@community/observability';
import type { EmailMetrics } from '../metrics';
import { BreakerOpenError } from './errors';

export type BreakerState = 'closed' | 'open';

export interface BreakerOptions {
  /** Consecutive provider failures that open the breaker. */
  threshold: number;
  /** First wait before a probe while open; doubles (equal jitter) up to probeMaxMs. */
  probeMinMs: number;
  probeMaxMs: number;
  /** Connects to the provider (EHLO/AUTH, nodemailer's verify()); resolves if it answers. */
  probe: () => Promise<unknown>;
  logger: Logger;
  metrics: EmailMetrics;
}

/**
 * A circuit breaker for the SMTP provider, shared by every send of this process.
 *
 * closed ──N consecutive provider failures──► open ──probe succeeds──► closed
 *
 * While open, nothing is sent: the service pauses the email queue's consumer ('open' event), and
 * sends already in flight wait in `waitUntilClosed()` instead of failing, so an outage spends no
 * retry budget. A probe loop with exponential backoff and jitter checks the provider; the
 * first successful probe closes the breaker (it is the half-open trial: a probe costs one
 * connection, never a message), resumes consumption ('close' event) and releases the waiters.
 * If the provider is still unwell, N more failures reopen it.
 */
export class CircuitBreaker extends EventEmitter<{ open: []; close: [] }> {
  private current: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  private probing: Promise<void> | undefined;
  /** Aborted by stop(): ends the wait between probes at once. */
  private readonly stopping = new AbortController();
  private waiters = new Set<() => void>();
  private lastError = '';
  /** When lastError happened (ISO), so a reader can tell a fresh failure from an old one. */
  private lastErrorAt: string | null = null;

  constructor(private readonly options: BreakerOptions) {
    super();
    options.metrics.breakerOpen.set(0);
  }

  get state(): BreakerState {
    return this.current;
  }

  isOpen(): boolean {
    return this.current === 'open';
  }

  /** For /readyz details and logs. */
  describe(): {
    state: BreakerState;
    consecutiveFailures: number;
    openForMs: number;
    lastError: string;
    lastErrorAt: string | null;
    held: number;
  } {
    return {
      state: this.current,
      consecutiveFailures: this.failures,
      openForMs: this.current === 'open' ? Date.now() - this.openedAt : 0,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      held: this.waiters.size,
    };
  }

  /** The provider answered (accepted, or refused one message for good: it is alive either way). */
  recordSuccess(): void {
    this.failures = 0;
  }

  /** A transient provider failure (4xx, connection refused/dropped, timeout). */
  recordFailure(err: Error): void {
    this.failures += 1;
    this.noteError(err.message);
    if (this.current === 'closed' && this.failures >= this.options.threshold) this.open();
  }

  /**
   * Resolves at once when closed. Otherwise waits until a probe closes the breaker; rejects with
   * BreakerOpenError after `maxMs` or when `signal` aborts (handler deadline, forced shutdown), so
   * the message then takes the ordinary retry path.
   */
  waitUntilClosed(signal: AbortSignal | undefined, maxMs: number): Promise<void> {
    if (this.current === 'closed') return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiters.delete(onClose);
        this.options.metrics.breakerHeld.set(this.waiters.size);
        if (err) reject(err);
        else resolve();
      };
      const onClose = () => done();
      const onAbort = () => done(new BreakerOpenError('held message released by abort (handler deadline or shutdown)'));
      const timer = setTimeout(
        () => done(new BreakerOpenError(`still open after holding the message ${maxMs} ms`)),
        maxMs,
      );
      this.waiters.add(onClose);
      this.options.metrics.breakerHeld.set(this.waiters.size);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stops probing; waiters are released by their own deadline or signal. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.probing;
  }

  /**
   * Bounded and redacted: the text is shown on the unauthenticated /readyz and /v1/flow-control (a
   * provider's "550 alice@example.com: mailbox unavailable" names a recipient), never used as a
   * metric label.
   */
  private noteError(message: string): void {
    this.lastError = redactString(message).slice(0, 300);
    this.lastErrorAt = new Date().toISOString();
  }

  private open(): void {
    this.current = 'open';
    this.openedAt = Date.now();
    this.options.metrics.breakerOpen.set(1);
    this.options.metrics.breakerTransitions.inc({ to: 'open' });
    this.options.logger.error(
      { failures: this.failures, lastError: this.lastError },
      'SMTP circuit breaker opened: pausing the email queue and probing the provider',
    );
    this.emit('open');
    this.probing = this.probeUntilHealthy().finally(() => (this.probing = undefined));
  }

  private close(): void {
    const openForMs = Date.now() - this.openedAt;
    this.current = 'closed';
    this.failures = 0;
    this.options.metrics.breakerOpen.set(0);
    this.options.metrics.breakerTransitions.inc({ to: 'closed' });
    this.options.logger.info(
      { openForMs, held: this.waiters.size },
      'SMTP circuit breaker closed: provider answers again, resuming',
    );
    this.emit('close');
    for (const release of [...this.waiters]) release();
  }

  private async probeUntilHealthy(): Promise<void> {
    const { probeMinMs, probeMaxMs } = this.options;
    const { signal } = this.stopping;
    for (let attempt = 0; !signal.aborted; attempt++) {
      // Jittered: replicas that opened together do not probe (and resume) in lockstep. Equal jitter
      // (half the ceiling at least) because a probe right after the failure that opened the
      // breaker would only fail again. Unref'd: a pending probe never keeps the process alive.
      const delay = backoffDelay(attempt, { baseMs: probeMinMs, maxMs: probeMaxMs, jitter: 'equal' });
      const slept = await sleep(delay, true, { signal, ref: false }).catch(() => false);
      if (!slept) return;
      try {
        await this.options.probe();
        this.options.metrics.breakerProbes.inc({ outcome: 'ok' });
        this.close();
        return;
      } catch (err) {
        this.noteError((err as Error).message);
        this.options.metrics.breakerProbes.inc({ outcome: 'failed' });
        this.options.logger.warn(
          { attempt: attempt + 1, err: this.lastError },
          'SMTP probe failed; breaker stays open',
        );
      }
    }
  }
}
