import { Registry } from 'prom-client';
import { eventually, testLogger } from '@community/testing';
import { emailMetrics } from '../metrics';
import { ProviderBreaker } from './breaker';
import { BreakerOpenError } from './errors';
import { SmtpProviders } from './providers';
import type { Sender } from './sender';

const noSender: Sender = {
  send: () => Promise.reject(new Error('not in this spec')),
  close: () => undefined,
};

function breaker(
  registry: Registry,
  o: {
    threshold: number;
    probe: () => Promise<unknown>;
    provider?: 'primary' | 'fallback';
    series?: 'queues' | 'provider';
  },
) {
  return new ProviderBreaker({
    threshold: o.threshold,
    probeMinMs: 20,
    probeMaxMs: 40,
    probe: o.probe,
    logger: testLogger(),
    metrics: emailMetrics(registry),
    provider: o.provider,
    series: o.series,
  });
}

async function gauge(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const m = registry.getSingleMetric(name);
  const { values } = (await m?.get()) ?? { values: [] };
  return values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))?.value;
}

describe('circuit breaker', () => {
  it('opens after N consecutive failures, holds waiters, probes with backoff and closes on the first good probe', async () => {
    let healthy = false;
    let probes = 0;
    const registry = new Registry();
    const primary = breaker(registry, {
      threshold: 3,
      probe: async () => {
        probes += 1;
        if (!healthy) throw new Error('still down');
      },
    });
    const providers = new SmtpProviders({
      providers: [{ name: 'primary', breaker: primary, sender: noSender }],
      metrics: emailMetrics(registry),
      logger: testLogger(),
    });
    const events: string[] = [];
    providers.on('open', () => events.push('open'));
    providers.on('close', () => events.push('close'));

    primary.recordFailure(new Error('1'));
    primary.recordFailure(new Error('2'));
    primary.recordSuccess(); // not consecutive: starts over
    primary.recordFailure(new Error('1'));
    primary.recordFailure(new Error('2'));
    expect(providers.state).toBe('closed');
    primary.recordFailure(new Error('3'));
    expect(providers.state).toBe('open');
    // One provider: its breaker publishes the queues' series itself.
    expect(await gauge(registry, 'email_smtp_breaker_open')).toBe(1);

    const held = providers.waitUntilClosed(undefined, 5_000);
    await expect(providers.waitUntilClosed(undefined, 10)).rejects.toBeInstanceOf(BreakerOpenError);
    const aborted = new AbortController();
    const released = providers.waitUntilClosed(aborted.signal, 5_000);
    aborted.abort();
    await expect(released).rejects.toThrow(/released by abort/);
    expect(providers.describe().held).toBe(1);

    // A failed probe keeps it open and the loop probes again (20–40 ms apart, unref'd timers).
    await eventually('two failed probes', () => probes >= 2, 10_000, 5);
    expect(providers.state).toBe('open');
    healthy = true;
    await held;
    expect(providers.state).toBe('closed');
    expect(events).toEqual(['open', 'close']);
    expect(await gauge(registry, 'email_smtp_breaker_open')).toBe(0);
    expect(await gauge(registry, 'email_smtp_breaker_probes_total', { provider: 'primary', outcome: 'ok' })).toBe(1);
    await providers.stop();
  });

  it('with a fallback: new sends go to it while the primary is open, back to the primary once it closes; open only when both are', async () => {
    const registry = new Registry();
    const health = { primary: false, fallback: false };
    const make = (provider: 'primary' | 'fallback') =>
      breaker(registry, {
        threshold: 1,
        provider,
        series: 'provider',
        probe: async () => {
          if (!health[provider]) throw new Error(`${provider} still down`);
        },
      });
    const primary = make('primary');
    const fallback = make('fallback');
    const providers = new SmtpProviders({
      providers: [
        { name: 'primary', breaker: primary, sender: noSender },
        { name: 'fallback', breaker: fallback, sender: noSender },
      ],
      metrics: emailMetrics(registry),
      logger: testLogger(),
    });
    const events: string[] = [];
    providers.on('open', () => events.push('open'));
    providers.on('close', () => events.push('close'));
    expect(providers.preferred()).toBe('primary');

    primary.recordFailure(new Error('421 primary busy'));
    expect([providers.preferred(), providers.isOpen(), providers.usable()]).toEqual(['fallback', false, ['fallback']]);
    expect(await gauge(registry, 'email_smtp_provider_breaker_open', { provider: 'primary' })).toBe(1);
    expect(await gauge(registry, 'email_smtp_breaker_open')).toBe(0);
    // A message bound to the primary waits for the primary, not for any provider.
    const boundToPrimary = providers.waitUntilClosed(undefined, 5_000, 'primary');
    await expect(providers.waitUntilClosed(undefined, 5_000)).resolves.toBeUndefined();
    expect(providers.describeProviders().primary).toMatchObject({
      state: 'open',
      held: 1,
      lastError: '421 primary busy',
    });

    fallback.recordFailure(new Error('fallback down'));
    expect([providers.preferred(), providers.isOpen()]).toEqual([undefined, true]);
    expect(await gauge(registry, 'email_smtp_breaker_open')).toBe(1);
    expect(providers.describe()).toMatchObject({ state: 'open', lastError: 'fallback down' });
    const any = providers.waitUntilClosed(undefined, 5_000);

    health.fallback = true; // the fallback comes back first: 'any' is released, the bound one is not
    await any;
    expect([providers.preferred(), providers.isOpen()]).toEqual(['fallback', false]);
    expect(providers.describeProviders().primary).toMatchObject({ held: 1 });
    health.primary = true;
    await boundToPrimary;
    expect(providers.preferred()).toBe('primary');
    expect(events).toEqual(['open', 'close']);
    expect(await gauge(registry, 'email_smtp_breaker_transitions_total', { to: 'open' })).toBe(1);
    expect(
      await gauge(registry, 'email_smtp_provider_breaker_transitions_total', { provider: 'primary', to: 'closed' }),
    ).toBe(1);
    // A message bound to a provider this process does not have is refused at once.
    const single = new SmtpProviders({
      providers: [{ name: 'primary', breaker: make('primary'), sender: noSender }],
      metrics: emailMetrics(new Registry()),
      logger: testLogger(),
    });
    await expect(single.waitUntilClosed(undefined, 5_000, 'fallback')).rejects.toThrow(/does not have/);
    await Promise.all([providers.stop(), single.stop()]);
  });

  it('describes its last error redacted and bounded: the unauthenticated /readyz and /v1/flow-control show it', async () => {
    const b = new ProviderBreaker({
      threshold: 1,
      probeMinMs: 60_000,
      probeMaxMs: 60_000,
      probe: async () => undefined,
      logger: testLogger(),
      metrics: emailMetrics(new Registry()),
    });
    b.recordFailure(new Error(`550 5.1.1 <alice.smith@example.com>: mailbox unavailable ${'x'.repeat(400)}`));
    const { lastError } = b.describe();
    expect(lastError).toMatch(/^550 5\.1\.1 <a\*\*\*@example\.com>: mailbox unavailable x+$/);
    expect(lastError).not.toContain('alice.smith');
    expect(lastError).toHaveLength(300);
    await b.stop();
  });
});
