import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { backoffDelay } from '@community/messaging';
import { redactString } from '@community/observability';
import type { EmailMetrics } from '../metrics';
import type { ProviderName } from './provider-name';

export type BreakerState = 'closed' | 'open';

/** What /readyz and /v1/flow-control say of a breaker. */
export interface BreakerDescription {
  state: BreakerState;
  consecutiveFailures: number;
  openForMs: number;
  lastError: string;
  lastErrorAt: string | null;
  /** Messages waiting for it to close. */
  held: number;
}

/**
 * What the rest of the service sees of the SMTP side: whether an email can be sent now, and the
 * 'open' / 'close' events the email queues pause and resume on. One provider's breaker is one; the
 * failover set over two providers (smtp/providers.ts) is one too, open while every provider's is.
 */
export interface CircuitBreaker {
  readonly state: BreakerState;
  isOpen(): boolean;
  describe(): BreakerDescription;
  on(event: 'open' | 'close', listener: () => void): unknown;
}

/**
 * Where a breaker publishes its state. Without a fallback the primary's breaker is the email
 * queues' breaker and publishes the `email_smtp_breaker_*` series as it always did; with one, each
 * provider's breaker publishes `email_smtp_provider_breaker_*{provider}` and the failover set
 * publishes the queues' series (smtp/providers.ts).
 */
export type BreakerSeries = 'queues' | 'provider';

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
  /** The provider this breaker guards (logs, the probe counter's label). Default 'primary'. */
  provider?: ProviderName;
  /** Default 'queues': the breaker of a service without a fallback. */
  series?: BreakerSeries;
}

/**
 * A circuit breaker for one SMTP provider, shared by every send of this process to it.
 *
 * closed ──N consecutive provider failures──► open ──probe succeeds──► closed
 *
 * While open, nothing new is sent to this provider: the failover set (smtp/providers.ts) sends
 * through the other provider if there is one, and otherwise the service pauses the email queues'
 * consumers and holds the sends already in flight until a breaker closes, so an outage spends no
 * retry budget. A probe loop with exponential backoff and jitter checks the provider; the first
 * successful probe closes the breaker (it is the half-open trial: a probe costs one connection,
 * never a message) and emits 'close'. If the provider is still unwell, N more failures reopen it.
 */
let errorSeq = 0;

export class ProviderBreaker extends EventEmitter<{ open: []; close: [] }> implements CircuitBreaker {
  readonly provider: ProviderName;
  private readonly series: BreakerSeries;
  private current: BreakerState = 'closed';
  private failures = 0;
  private openedAt = 0;
  private probing: Promise<void> | undefined;
  /** Aborted by stop(): ends the wait between probes at once. */
  private readonly stopping = new AbortController();
  private lastError = '';
  /** When lastError happened (ISO), so a reader can tell a fresh failure from an old one. */
  private lastErrorAt: string | null = null;
  /** Orders errors across this process's breakers when two fall in the same millisecond. */
  lastErrorSeq = 0;

  constructor(private readonly options: BreakerOptions) {
    super();
    this.provider = options.provider ?? 'primary';
    this.series = options.series ?? 'queues';
    this.publishOpen(false);
  }

  get state(): BreakerState {
    return this.current;
  }

  isOpen(): boolean {
    return this.current === 'open';
  }

  /** For /readyz details and logs. `held` is the failover set's to count (it holds the messages). */
  describe(): BreakerDescription {
    return {
      state: this.current,
      consecutiveFailures: this.failures,
      openForMs: this.current === 'open' ? Date.now() - this.openedAt : 0,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      held: 0,
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

  /** Stops probing; held messages are released by their own deadline or signal. */
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
    this.lastErrorSeq = ++errorSeq;
  }

  private publishOpen(open: boolean): void {
    const { metrics } = this.options;
    if (this.series === 'queues') metrics.breakerOpen.set(open ? 1 : 0);
    else metrics.providerBreakerOpen.set({ provider: this.provider }, open ? 1 : 0);
  }

  private publishTransition(to: BreakerState): void {
    const { metrics } = this.options;
    if (this.series === 'queues') metrics.breakerTransitions.inc({ to });
    else metrics.providerBreakerTransitions.inc({ provider: this.provider, to });
  }

  private open(): void {
    this.current = 'open';
    this.openedAt = Date.now();
    this.publishOpen(true);
    this.publishTransition('open');
    this.options.logger.error(
      { provider: this.provider, failures: this.failures, lastError: this.lastError },
      this.series === 'queues'
        ? 'SMTP circuit breaker opened: pausing the email queue and probing the provider'
        : `SMTP circuit breaker of the ${this.provider} provider opened: probing it; sends go to another provider while one is closed`,
    );
    this.emit('open');
    this.probing = this.probeUntilHealthy().finally(() => (this.probing = undefined));
  }

  private close(): void {
    const openForMs = Date.now() - this.openedAt;
    this.current = 'closed';
    this.failures = 0;
    this.publishOpen(false);
    this.publishTransition('closed');
    this.options.logger.info(
      { provider: this.provider, openForMs },
      this.series === 'queues'
        ? 'SMTP circuit breaker closed: provider answers again, resuming'
        : `SMTP circuit breaker of the ${this.provider} provider closed: it answers again and takes new sends`,
    );
    this.emit('close');
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
        this.options.metrics.breakerProbes.inc({ provider: this.provider, outcome: 'ok' });
        this.close();
        return;
      } catch (err) {
        this.noteError((err as Error).message);
        this.options.metrics.breakerProbes.inc({ provider: this.provider, outcome: 'failed' });
        this.options.logger.warn(
          { provider: this.provider, attempt: attempt + 1, err: this.lastError },
          'SMTP probe failed; breaker stays open',
        );
      }
    }
  }
}
