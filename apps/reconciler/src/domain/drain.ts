/**
 * How fast a work queue drains, and how that reads on the checklist: the arithmetic behind the
 * `backlog` and `oldest-message` lines of domain/status.ts, pure so each rule has a spec.
 */
import type { QueueSample, RateLimitReading } from './facts';

/** The rate a queue drains at: the last minute's average when sampled, else the broker's last 5 s sample. */
export const drainRateOf = (q: QueueSample): number => q.drainRate ?? q.ackRate;

/**
 * Estimated age of a work queue's head message: the broker's head timestamp when it reports one
 * (classic queues); otherwise, for quorum queues, Little's law on what is waiting and how fast it is
 * consumed (ready ÷ drain rate, the minute's average: see drainRateOf). null: messages wait and
 * nothing is consumed (the age grows without bound).
 */
export function oldestAgeMs(q: QueueSample, now: Date): number | null {
  if (q.ready === 0) return 0;
  if (q.headTimestamp !== null) return Math.max(0, now.getTime() - q.headTimestamp * 1000);
  const rate = drainRateOf(q);
  if (rate > 0) return Math.round((q.ready / rate) * 1000);
  return null;
}

/** How a queue drains: its rate, the time to consume what is ready now, and what caps the rate. */
export interface Drain {
  perSecond: number;
  /** ready ÷ rate; null when nothing is consumed. */
  etaMs: number | null;
  /** `ready` fell over the rate window. */
  shrinking: boolean;
  /** The configured limit the drain runs at (≥ 90 % of it, summed over the queues it covers), e.g. "SMTP rate limit 20/s". */
  limitedBy: string | null;
}

export function drainOf(q: QueueSample, all: readonly QueueSample[], rateLimits: readonly RateLimitReading[]): Drain {
  const perSecond = drainRateOf(q);
  const limit = rateLimits.find((l) => l.perSecond > 0 && l.queues.includes(q.name));
  const together = limit
    ? all.filter((x) => limit.queues.includes(x.name)).reduce((sum, x) => sum + drainRateOf(x), 0)
    : 0;
  return {
    perSecond,
    etaMs: q.ready === 0 ? 0 : perSecond > 0 ? Math.round((q.ready / perSecond) * 1000) : null,
    shrinking: (q.readyTrend ?? 0) < 0,
    limitedBy: limit && together >= 0.9 * limit.perSecond ? `${limit.name} ${limit.perSecond}/s` : null,
  };
}

const rate = (perSecond: number): string => (perSecond >= 10 ? String(Math.round(perSecond)) : perSecond.toFixed(1));
export const duration = (ms: number): string =>
  ms < 120_000
    ? `${Math.round(ms / 1000)} s`
    : ms < 7_200_000
      ? `${Math.round(ms / 60_000)} min`
      : `${Math.round(ms / 3_600_000)} h`;

/** "800 ready, draining 20/s (SMTP rate limit 20/s), ETA 40 s", or "…, not draining". */
export function drainText(q: QueueSample, d: Drain): string {
  if (d.etaMs === null) return `${q.name}: ${q.ready} ready, not draining`;
  return `${q.name}: ${q.ready} ready, draining ${rate(d.perSecond)}/s${d.limitedBy ? ` (${d.limitedBy})` : ''}, ETA ${duration(d.etaMs)}`;
}
