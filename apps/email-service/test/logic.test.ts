import { Registry } from 'prom-client';
import { ConfigError } from '@community/config';
import { classify } from '@community/messaging';
import { testLogger } from '@community/testing';
import { loadEmailConfig } from '../src/config';
import { decide } from '../src/handlers/notification-created';
import { emailMetrics } from '../src/metrics';
import { CircuitBreaker } from '../src/smtp/breaker';
import { BreakerOpenError, SmtpPermanentError, SmtpTransientError, toSmtpError } from '../src/smtp/errors';
import { createRateLimiter } from '../src/smtp/rate-limiter';
import { digestKey, windowFor } from '../src/store/digests';
import { UnsubscribeTokens } from '../src/unsubscribe/token';

describe('SMTP error classification', () => {
  const err = (props: Record<string, unknown>) => Object.assign(new Error(String(props.response ?? 'boom')), props);

  it('5xx (except 503) is permanent, carrying the reply; 4xx and connection errors are transient', () => {
    const p = toSmtpError(err({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user', command: 'RCPT TO' }));
    expect(p).toBeInstanceOf(SmtpPermanentError);
    expect(p.message).toBe('SMTP RCPT TO refused with 550: 550 5.1.1 No such user');
    expect(classify(p)).toBe('permanent');
    for (const e of [
      err({ code: 'EENVELOPE', responseCode: 451, response: '451 4.7.1 Greylisted' }),
      err({ code: 'ECONNECTION', message: 'Connection closed unexpectedly' }),
      err({ code: 'ETIMEDOUT' }),
      err({ code: 'EMESSAGE', responseCode: 503, response: '503 bad sequence' }),
      // A provider-level refusal (authentication) goes to the breaker, never dead-letters every message.
      err({ code: 'EAUTH', responseCode: 535, response: '535 auth failed' }),
      new Error('socket hang up'),
    ]) {
      const t = toSmtpError(e);
      expect(t).toBeInstanceOf(SmtpTransientError);
      expect(classify(t)).toBe('transient');
    }
    expect(classify(new BreakerOpenError('x'))).toBe('transient');
  });
});

describe('rate limiter', () => {
  afterEach(() => jest.useRealTimers());

  it('releases exactly the configured rate, in arrival order, however many wait', async () => {
    jest.useFakeTimers();
    const limiter = createRateLimiter(200, 1, () => Date.now());
    const order: number[] = [];
    for (let i = 0; i < 1000; i++) void limiter.acquire().then(() => order.push(i));
    await jest.advanceTimersByTimeAsync(1000);
    expect(order).toHaveLength(201); // t = 0, then one every 5 ms
    expect(order).toEqual([...order].sort((x, y) => x - y));
    await jest.advanceTimersByTimeAsync(4000);
    expect(order).toHaveLength(1000);
  });

  it('catches up after a late timer (busy event loop), by at most 100 ms of slots', async () => {
    let t = 0;
    const limiter = createRateLimiter(100, 1, () => t);
    const released: number[] = [];
    for (let i = 0; i < 20; i++) void limiter.acquire().then(() => released.push(t));
    await new Promise((r) => setImmediate(r));
    expect(released).toHaveLength(1);
    t = 50; // the event loop was blocked for 50 ms: the 5 slots it missed go out at once
    await new Promise((r) => setTimeout(r, 30));
    expect(released.length).toBe(6);
    t = 10_000; // blocked for 10 s: only 100 ms of missed slots (10) are made up, not 10 s of them
    await new Promise((r) => setTimeout(r, 30));
    expect(released.length).toBe(6 + 11);
  });

  it('allows a burst, and an aborted wait rejects', async () => {
    let t = 0;
    const limiter = createRateLimiter(10, 5, () => t);
    for (let i = 0; i < 5; i++) await limiter.acquire(); // the burst passes at once
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
    t = 10_000;
    await expect(limiter.acquire()).resolves.toBeUndefined();
    expect(createRateLimiter(0).ratePerSecond).toBe(0);
  });
});

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

    await new Promise((r) => setTimeout(r, 150));
    expect(probes).toBeGreaterThanOrEqual(2);
    healthy = true;
    await held;
    expect(breaker.state).toBe('closed');
    expect(events).toEqual(['open', 'close']);
    await breaker.stop();
  });
});

describe('unsubscribe tokens', () => {
  const tokens = new UnsubscribeTokens('a-secret-that-is-long-enough-for-tests');

  it('round-trips, and refuses other secrets, tampering and unsubscribable scopes', () => {
    const token = tokens.sign({ userId: 'u:1', scope: 'reaction' });
    expect(tokens.verify(token)).toEqual({ userId: 'u:1', scope: 'reaction' });
    expect(new UnsubscribeTokens('another-secret-entirely-0123456789').verify(token)).toBeUndefined();
    expect(tokens.verify(`${token}x`)).toBeUndefined();
    expect(tokens.verify(tokens.sign({ userId: 'u', scope: 'security_alert' as never }))).toBeUndefined();
    expect(tokens.verify(undefined)).toBeUndefined();
  });
});

describe('decisions and windows', () => {
  const data = { notificationId: 'n', userId: 'u', idempotencyKey: 'k', resourceType: 'post', resourceId: 'r' };

  it('follows emailChannel, except that security alerts always go immediately', () => {
    expect(decide({ ...data, type: 'mention', emailChannel: 'immediate' })).toBe('immediate');
    expect(decide({ ...data, type: 'follow', emailChannel: 'digest' })).toBe('digest');
    expect(decide({ ...data, type: 'reply', emailChannel: 'off' })).toBe('off');
    expect(decide({ ...data, type: 'security_alert', emailChannel: 'off' })).toBe('immediate');
    expect(decide({ ...data, type: 'security_alert', emailChannel: 'digest' })).toBe('immediate');
  });

  it('aligns daily and hourly windows to UTC', () => {
    const at = new Date('2026-11-29T10:42:13.123Z');
    expect(windowFor(at, 'daily')).toEqual({ start: new Date('2026-11-29T00:00:00Z'), end: new Date('2026-11-30T00:00:00Z') });
    expect(windowFor(at, 'hourly')).toEqual({ start: new Date('2026-11-29T10:00:00Z'), end: new Date('2026-11-29T11:00:00Z') });
    expect(digestKey('u1', new Date('2026-11-29T00:00:00Z'))).toBe('digest:u1:2026-11-29T00:00:00.000Z');
  });
});

describe('configuration', () => {
  it('has working defaults and refuses a lease shorter than an SMTP exchange, naming the variable', () => {
    const config = loadEmailConfig({});
    expect(config).toMatchObject({ PORT: 3002, SMTP_RATE_PER_SECOND: 20, SMTP_POOL_SIZE: 5, DIGEST_PERIOD: 'daily', PUBLIC_BASE_URL: 'http://127.0.0.1:3000' });
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(ConfigError);
    expect(() => loadEmailConfig({ EMAIL_LEASE_MS: '1000' })).toThrow(/EMAIL_LEASE_MS: 1000 must exceed/);
    expect(() => loadEmailConfig({ DIGEST_PERIOD: 'weekly' })).toThrow(/DIGEST_PERIOD/);
  });
});
