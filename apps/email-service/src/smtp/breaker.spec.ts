import { Registry } from 'prom-client';
import { eventually, testLogger } from '@community/testing';
import { emailMetrics } from '../metrics';
import { CircuitBreaker } from './breaker';
import { BreakerOpenError } from './errors';

describe('circuit breaker', () => {
  it('opens after N consecutive failures, holds waiters, probes with backoff and closes on the first good probe', async () => {
    let healthy = false;
    let probes = 0;
    const breaker = new CircuitBreaker({
      threshold: 3,
      probeMinMs: 20,
      probeMaxMs: 40,
      probe: async () => {
        probes += 1;
        if (!healthy) throw new Error('still down');
      },
      logger: testLogger(),
      metrics: emailMetrics(new Registry()),
    });
    const events: string[] = [];
    breaker.on('open', () => events.push('open'));
    breaker.on('close', () => events.push('close'));

    breaker.recordFailure(new Error('1'));
    breaker.recordFailure(new Error('2'));
    breaker.recordSuccess(); // not consecutive: starts over
    breaker.recordFailure(new Error('1'));
    breaker.recordFailure(new Error('2'));
    expect(breaker.state).toBe('closed');
    breaker.recordFailure(new Error('3'));
    expect(breaker.state).toBe('open');

    const held = breaker.waitUntilClosed(undefined, 5_000);
    await expect(breaker.waitUntilClosed(undefined, 10)).rejects.toBeInstanceOf(BreakerOpenError);
    const aborted = new AbortController();
    const released = breaker.waitUntilClosed(aborted.signal, 5_000);
    aborted.abort();
    await expect(released).rejects.toThrow(/released by abort/);

    // A failed probe keeps it open and the loop probes again (20–40 ms apart, unref'd timers).
    await eventually('two failed probes', () => probes >= 2, 10_000, 5);
    expect(breaker.state).toBe('open');
    healthy = true;
    await held;
    expect(breaker.state).toBe('closed');
    expect(events).toEqual(['open', 'close']);
    await breaker.stop();
  });

  it('describes its last error redacted and bounded: the unauthenticated /readyz and /v1/flow-control show it', async () => {
    const breaker = new CircuitBreaker({
      threshold: 1,
      probeMinMs: 60_000,
      probeMaxMs: 60_000,
      probe: async () => undefined,
      logger: testLogger(),
      metrics: emailMetrics(new Registry()),
    });
    breaker.recordFailure(new Error(`550 5.1.1 <alice.smith@example.com>: mailbox unavailable ${'x'.repeat(400)}`));
    const { lastError } = breaker.describe();
    expect(lastError).toMatch(/^550 5\.1\.1 <a\*\*\*@example\.com>: mailbox unavailable x+$/);
    expect(lastError).not.toContain('alice.smith');
    expect(lastError).toHaveLength(300);
    await breaker.stop();
  });
});
