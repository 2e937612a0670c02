import { backoffMs, nextAfter, retryAfterMs } from './answer';

const now = new Date('2026-12-03T10:00:00.000Z');
const facts = { attempts: 1, maxAttempts: 5, now, expiresAt: new Date(now.getTime() + 86_400_000) };

describe('nextAfter', () => {
  it('201 (any 2xx) is sent', () => {
    expect(nextAfter({ kind: 'status', status: 201 }, facts)).toEqual({ state: 'sent' });
    expect(nextAfter({ kind: 'status', status: 202 }, facts)).toEqual({ state: 'sent' });
  });

  it('404 and 410 are gone', () => {
    expect(nextAfter({ kind: 'status', status: 404 }, facts)).toEqual({ state: 'gone' });
    expect(nextAfter({ kind: 'status', status: 410 }, facts)).toEqual({ state: 'gone' });
  });

  it('413 fails at once, with the reason', () => {
    expect(nextAfter({ kind: 'status', status: 413, body: 'too big' }, facts)).toEqual({
      state: 'failed',
      reason: 'payload_too_large: the push service answered 413: too big',
    });
  });

  it('other 4xx fail at once', () => {
    expect(nextAfter({ kind: 'status', status: 403 }, facts)).toMatchObject({
      state: 'failed',
      reason: /^rejected_403/,
    });
    expect(nextAfter({ kind: 'status', status: 400 }, facts)).toMatchObject({
      state: 'failed',
      reason: /^rejected_400/,
    });
  });

  it('429 retries at its Retry-After (seconds)', () => {
    expect(nextAfter({ kind: 'status', status: 429, retryAfter: '7' }, facts)).toEqual({
      state: 'pending',
      at: new Date(now.getTime() + 7_000),
      reason: 'the push service answered 429',
    });
  });

  it('503 retries at its Retry-After (an HTTP date)', () => {
    const at = new Date(now.getTime() + 120_000);
    expect(nextAfter({ kind: 'status', status: 503, retryAfter: at.toUTCString() }, facts)).toMatchObject({
      state: 'pending',
      at,
    });
  });

  it('5xx and no answer without Retry-After take the backoff of their attempt', () => {
    expect(nextAfter({ kind: 'status', status: 500 }, { ...facts, attempts: 2 })).toMatchObject({
      state: 'pending',
      at: new Date(now.getTime() + 5_000),
    });
    expect(nextAfter({ kind: 'no-answer', message: 'ECONNREFUSED' }, facts)).toMatchObject({
      state: 'pending',
      at: new Date(now.getTime() + 1_000),
      reason: 'no answer from the push service: ECONNREFUSED',
    });
  });

  it('fails once the attempts are spent', () => {
    expect(nextAfter({ kind: 'status', status: 500 }, { ...facts, attempts: 5 })).toMatchObject({
      state: 'failed',
      reason: /^retries_exhausted: the push service answered 500 \(attempt 5 of 5\)/,
    });
  });

  it('fails when the retry would come after the TTL', () => {
    const soon = { ...facts, expiresAt: new Date(now.getTime() + 60_000) };
    expect(nextAfter({ kind: 'status', status: 429, retryAfter: '3600' }, soon)).toMatchObject({
      state: 'failed',
      reason: /^expired:/,
    });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs(' 30 ', now)).toBe(30_000);
    expect(retryAfterMs(new Date(now.getTime() + 5_000).toUTCString(), now)).toBe(5_000);
    expect(retryAfterMs(new Date(now.getTime() - 5_000).toUTCString(), now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('1.5', now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});

it('backs off 1 s, 5 s, 30 s, 2 min, 10 min, then 30 min', () => {
  expect([1, 2, 3, 4, 5, 6, 9].map(backoffMs)).toEqual([1_000, 5_000, 30_000, 120_000, 600_000, 1_800_000, 1_800_000]);
});
