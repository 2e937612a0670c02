import { isCriticalEmail } from './lanes';

/**
 * When a non-critical immediate email may go out (docs/EMAIL.md "Delivery timing"): not before the
 * end of the user's quiet hours (notification.created's `quietUntil`), and, with delay-then-check on
 * (`EMAIL_READ_CHECK_DELAY_MS` > 0), not before `readCheckDelayMs` after it arrived here. A security
 * alert never waits, whatever the event says.
 */

/** The longest quiet-hours hold honoured: quiet hours end within a day; a later instant is a producer bug, not a reason to keep an email forever. */
export const MAX_QUIET_HOLD_MS = 86_400_000;

export interface Hold {
  /** The not-before time (next_attempt_at of the held row). */
  until: Date;
  reason: 'quiet_hours' | 'read_check';
}

export function holdFor(
  n: { type: string; quietUntil?: string },
  receivedAt: Date,
  readCheckDelayMs: number,
): Hold | undefined {
  if (isCriticalEmail(n.type)) return undefined;
  const received = receivedAt.getTime();
  const quiet = n.quietUntil === undefined ? NaN : Date.parse(n.quietUntil);
  const quietEnd = Number.isFinite(quiet) && quiet > received ? Math.min(quiet, received + MAX_QUIET_HOLD_MS) : 0;
  const checkAt = readCheckDelayMs > 0 ? received + readCheckDelayMs : 0;
  if (quietEnd === 0 && checkAt === 0) return undefined;
  return quietEnd >= checkAt
    ? { until: new Date(quietEnd), reason: 'quiet_hours' }
    : { until: new Date(checkAt), reason: 'read_check' };
}
