/** Digest windows: a user's digest collects what happened in one UTC-aligned day or hour. */
import { compositeKey } from '@community/contracts';

export type DigestPeriod = 'daily' | 'hourly';
const PERIOD_MS: Record<DigestPeriod, number> = { daily: 86_400_000, hourly: 3_600_000 };

/** The window containing `at`: UTC-aligned days or hours. */
export function windowFor(at: Date, period: DigestPeriod): { start: Date; end: Date } {
  const ms = PERIOD_MS[period];
  const start = Math.floor(at.getTime() / ms) * ms;
  return { start: new Date(start), end: new Date(start + ms) };
}

/**
 * `digest:{userId}:{windowStart ISO}`: the ledger key of the one digest email of a window. The user id
 * is escaped by the contract's key rule; the timestamp, last and of a fixed format, is appended as is.
 */
export function digestKey(userId: string, windowStart: Date): string {
  return `${compositeKey('digest', { userId })}:${windowStart.toISOString()}`;
}

/** The window right after the one ending at `end` (an item that arrives while its window is closing goes there). */
export function nextWindow(end: Date, period: DigestPeriod): { start: Date; end: Date } {
  return { start: end, end: new Date(end.getTime() + PERIOD_MS[period]) };
}
