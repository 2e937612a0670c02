/**
 * What a push service's answer does to a ledger row (docs/PUSH.md "Status codes"), as a pure rule:
 *
 *   201 (any 2xx)            → sent
 *   404, 410                 → gone: the subscription expired or was revoked; it is removed
 *   413                      → failed (payload_too_large): the same payload is as large next time
 *   429, 5xx, no answer      → retry at Retry-After (seconds or an HTTP date) or the backoff,
 *                              failed instead once PUSH_MAX_ATTEMPTS are spent or the retry would
 *                              come after the notification's TTL ran out (expired)
 *   any other 4xx            → failed (rejected_<status>): a VAPID or request problem no retry fixes
 */

export type PushAnswer =
  { kind: 'status'; status: number; retryAfter?: string; body?: string } | { kind: 'no-answer'; message: string };

export type Next =
  | { state: 'sent' }
  | { state: 'gone' }
  | { state: 'failed'; reason: string }
  | { state: 'pending'; at: Date; reason: string };

export interface AnswerFacts {
  /** Attempts so far, this one included. */
  attempts: number;
  maxAttempts: number;
  now: Date;
  /** The notification's expiry (its creation + TTL): no push service would deliver it later. */
  expiresAt: Date;
}

/** Backoff between attempts without a Retry-After: 1 s, 5 s, 30 s, 2 min, 10 min, then 30 min. */
export const BACKOFF_MS = [1_000, 5_000, 30_000, 120_000, 600_000, 1_800_000];

export function backoffMs(attempts: number): number {
  return BACKOFF_MS[Math.min(Math.max(attempts, 1), BACKOFF_MS.length) - 1];
}

/**
 * Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP date, as milliseconds from `now`;
 * undefined when absent or neither. A date in the past is 0 (retry now).
 */
export function retryAfterMs(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined; // "1.5", "-3": neither form
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

const quote = (body: string | undefined) => (body ? `: ${body.replace(/\s+/g, ' ').trim().slice(0, 200)}` : '');

export function nextAfter(answer: PushAnswer, facts: AnswerFacts): Next {
  if (answer.kind === 'status') {
    const { status } = answer;
    if (status >= 200 && status < 300) return { state: 'sent' };
    if (status === 404 || status === 410) return { state: 'gone' };
    if (status === 413)
      return { state: 'failed', reason: `payload_too_large: the push service answered 413${quote(answer.body)}` };
    if (status !== 429 && status < 500) {
      return {
        state: 'failed',
        reason: `rejected_${status}: the push service answered ${status}${quote(answer.body)}`,
      };
    }
  }
  const why =
    answer.kind === 'status'
      ? `the push service answered ${answer.status}${quote(answer.body)}`
      : `no answer from the push service: ${answer.message}`;
  if (facts.attempts >= facts.maxAttempts) {
    return { state: 'failed', reason: `retries_exhausted: ${why} (attempt ${facts.attempts} of ${facts.maxAttempts})` };
  }
  const hinted = answer.kind === 'status' ? retryAfterMs(answer.retryAfter, facts.now) : undefined;
  const delay = hinted ?? backoffMs(facts.attempts);
  const at = new Date(facts.now.getTime() + delay);
  if (at > facts.expiresAt) {
    return { state: 'failed', reason: `expired: ${why}, and a retry at ${at.toISOString()} would come after its TTL` };
  }
  return { state: 'pending', at, reason: why };
}
