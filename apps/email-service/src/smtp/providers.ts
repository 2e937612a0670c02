import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { EmailMetrics } from '../metrics';
import type { BreakerDescription, BreakerState, CircuitBreaker, ProviderBreaker } from './breaker';
import { BreakerOpenError, SmtpProviderUnavailableError } from './errors';
import type { ProviderName } from './provider-name';
import type { Sender } from './sender';

/** One provider: its breaker and its sender (rate limit → its own pooled transport). */
export interface SmtpProvider {
  name: ProviderName;
  breaker: ProviderBreaker;
  sender: Sender;
}

interface Waiter {
  /** The provider the held message is bound to, or 'any'. */
  on: ProviderName | 'any';
  ready: () => boolean;
  release: () => void;
}

/** The provider series name on /metrics (the reconciler matches /v1/flow-control's `series` with it). */
export const providerSeries = (name: ProviderName): string => `email_smtp_provider_breaker_open{provider="${name}"}`;

/**
 * The SMTP providers of this process (the primary, and the fallback when SMTP_FALLBACK_URL is
 * set), seen by the rest of the service as one breaker: open while no provider can take a send.
 *
 *   primary closed                       → new attempts go to the primary
 *   primary open, fallback closed        → new attempts go to the fallback
 *   primary closes again (probe ok)      → new attempts go to the primary again
 *   every breaker open                   → 'open': the email queues pause, in-flight messages are
 *                                          held, as with a single provider
 *
 * "New attempts": an attempt whose ledger row is bound to a provider (`pinned_provider`: an earlier
 * attempt there may have delivered it) goes to that provider only, whatever the breakers say, and
 * waits for it (`waitUntilClosed(…, provider)`) while its breaker is open. The ledger makes that
 * choice, before the SMTP conversation starts (store/ledger.ts `claim`); `sender.send(…, provider)`
 * only carries it out, and refuses with SmtpProviderUnavailableError, sending nothing, when that
 * provider's breaker is open. docs/EMAIL.md, "Two providers".
 *
 * Without a fallback this is the primary's breaker under another name: same state, same events,
 * and the primary's breaker publishes the `email_smtp_breaker_*` series itself, as it always did.
 * With one, each provider's breaker publishes `email_smtp_provider_breaker_*{provider}` and this
 * set publishes the queues' `email_smtp_breaker_open` and transitions. The held-message gauge is
 * this set's in both cases: it is where messages are held.
 */
export class SmtpProviders extends EventEmitter<{ open: []; close: [] }> implements CircuitBreaker {
  /** Routes each send to the provider named by its attempt (the preferred one when none is named). */
  readonly sender: Sender;
  private readonly byName: ReadonlyMap<ProviderName, SmtpProvider>;
  private allOpen = false;
  private allOpenSince = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(private readonly o: { providers: readonly SmtpProvider[]; metrics: EmailMetrics; logger: Logger }) {
    super();
    if (o.providers[0]?.name !== 'primary') throw new Error('SmtpProviders: the first provider is the primary');
    this.byName = new Map(o.providers.map((p) => [p.name, p]));
    for (const p of o.providers) {
      p.breaker.on('open', () => this.changed());
      p.breaker.on('close', () => this.changed());
    }
    if (this.hasFallback) o.metrics.breakerOpen.set(0);
    o.metrics.breakerHeld.set(0);
    this.sender = {
      send: (mail, channel, signal, provider) => {
        const name = provider ?? this.preferred() ?? 'primary';
        const p = this.byName.get(name);
        if (!p)
          throw new SmtpProviderUnavailableError(name, 'not configured in this process (SMTP_FALLBACK_URL unset)');
        if (p.breaker.isOpen()) throw new SmtpProviderUnavailableError(name, 'its circuit breaker is open');
        return p.sender.send(mail, channel, signal);
      },
      close: () => {
        for (const p of this.byName.values()) p.sender.close();
      },
    };
  }

  get hasFallback(): boolean {
    return this.byName.size > 1;
  }

  get names(): ProviderName[] {
    return [...this.byName.keys()];
  }

  get state(): BreakerState {
    return this.isOpen() ? 'open' : 'closed';
  }

  /** No provider can take a send: every breaker is open. */
  isOpen(): boolean {
    return this.preferred() === undefined;
  }

  /** Configured in this process and its breaker closed. */
  canSend(name: ProviderName): boolean {
    const p = this.byName.get(name);
    return p !== undefined && !p.breaker.isOpen();
  }

  /** Where a new attempt goes: the primary while its breaker is closed, else the fallback while its is. */
  preferred(): ProviderName | undefined {
    for (const p of this.byName.values()) if (!p.breaker.isOpen()) return p.name;
    return undefined;
  }

  /** The providers that can take a send now (a claim of a bound row is limited to them). */
  usable(): ProviderName[] {
    return this.names.filter((n) => this.canSend(n));
  }

  /**
   * Resolves at once when a send can go out: through `provider` when given (the message is bound
   * to it), through any provider otherwise. Else holds the message until a breaker closes; rejects
   * with BreakerOpenError after `maxMs` or when `signal` aborts (handler deadline, forced shutdown),
   * so the message then takes the ordinary retry path. A message bound to a provider this process
   * does not have (SMTP_FALLBACK_URL removed since) is refused at once: no hold would help.
   */
  waitUntilClosed(signal: AbortSignal | undefined, maxMs: number, provider?: ProviderName): Promise<void> {
    const ready = provider === undefined ? () => !this.isOpen() : () => this.canSend(provider);
    if (ready()) return Promise.resolve();
    if (provider !== undefined && !this.byName.has(provider)) {
      return Promise.reject(
        new BreakerOpenError(
          `an earlier attempt of this email went to the ${provider} provider, which this process does not have (SMTP_FALLBACK_URL unset); only that provider may send it`,
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiters.delete(waiter);
        this.o.metrics.breakerHeld.set(this.waiters.size);
        if (err) reject(err);
        else resolve();
      };
      const waiter: Waiter = { on: provider ?? 'any', ready, release: () => done() };
      const onAbort = () => done(new BreakerOpenError('held message released by abort (handler deadline or shutdown)'));
      const timer = setTimeout(
        () => done(new BreakerOpenError(`still open after holding the message ${maxMs} ms`)),
        maxMs,
      );
      this.waiters.add(waiter);
      this.o.metrics.breakerHeld.set(this.waiters.size);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * The email queues' breaker, for /readyz `smtpBreaker` and the `email_smtp_breaker_open` entry of
   * /v1/flow-control: open while every provider's is; the failures of the provider that takes new
   * sends, and the most recent error of any provider.
   */
  describe(): BreakerDescription {
    const all = [...this.byName.values()].map((p) => p.breaker.describe());
    const current = [...this.byName.values()].find((p) => !p.breaker.isOpen())?.breaker.describe() ?? all[0];
    // The most recent error of any provider (by sequence: two can fall in the same millisecond).
    const latest = [...this.byName.values()]
      .map((p) => p.breaker)
      .reduce((a, b) => (b.lastErrorSeq > a.lastErrorSeq ? b : a))
      .describe();
    const open = this.isOpen();
    return {
      state: open ? 'open' : 'closed',
      consecutiveFailures: current.consecutiveFailures,
      openForMs: open ? (this.hasFallback ? Date.now() - this.allOpenSince : all[0].openForMs) : 0,
      lastError: latest.lastError,
      lastErrorAt: latest.lastErrorAt,
      held: this.waiters.size,
    };
  }

  /** Each provider's breaker, with the messages held for it (bound to it, or waiting for any). */
  describeProviders(): Partial<Record<ProviderName, BreakerDescription>> {
    const out: Partial<Record<ProviderName, BreakerDescription>> = {};
    for (const p of this.byName.values()) {
      const held = [...this.waiters].filter((w) => w.on === p.name || w.on === 'any').length;
      out[p.name] = { ...p.breaker.describe(), held };
    }
    return out;
  }

  /** Stops every breaker's probing; held messages are released by their own deadline or signal. */
  async stop(): Promise<void> {
    await Promise.all([...this.byName.values()].map((p) => p.breaker.stop()));
  }

  /** A provider's breaker opened or closed: release the holds it satisfies, then the queues' view. */
  private changed(): void {
    for (const w of [...this.waiters]) if (w.ready()) w.release();
    const open = this.isOpen();
    if (open === this.allOpen) return;
    this.allOpen = open;
    if (open) this.allOpenSince = Date.now();
    if (this.hasFallback) {
      this.o.metrics.breakerOpen.set(open ? 1 : 0);
      this.o.metrics.breakerTransitions.inc({ to: open ? 'open' : 'closed' });
      if (open) {
        this.o.logger.error(
          { providers: this.describeProviders() },
          'every SMTP provider breaker is open: pausing the email queues until one closes',
        );
      } else {
        this.o.logger.info(
          { provider: this.preferred(), openForMs: Date.now() - this.allOpenSince },
          'an SMTP provider answers again: resuming the email queues',
        );
      }
    }
    this.emit(open ? 'open' : 'close');
  }
}
