import type { NotificationType } from '@community/contracts';

/**
 * When a push is first due (docs/PUSH.md "Quiet hours and delay-then-check"): at once, or at the
 * end of a hold. A security alert is never held. Any other notification waits for the later of
 * the end of the user's quiet hours (`quietUntil`, set by notification-service) and, with
 * delay-then-check on, its arrival plus the delay, after which it is pushed only if still unread.
 */
export interface TimingSource {
  type: NotificationType;
  quietUntil?: string;
}

/** The longest quiet-hours hold honoured: a `quietUntil` further ahead is a producer's mistake. */
export const MAX_QUIET_HOLD_MS = 86_400_000;

/** The end of the hold, or undefined when the push is due at once. */
export function holdUntil(n: TimingSource, received: Date, readCheckDelayMs: number): Date | undefined {
  if (n.type === 'security_alert') return undefined;
  const now = received.getTime();
  let due = now;
  const quiet = n.quietUntil === undefined ? NaN : Date.parse(n.quietUntil);
  if (Number.isFinite(quiet)) due = Math.max(due, Math.min(quiet, now + MAX_QUIET_HOLD_MS));
  if (readCheckDelayMs > 0) due = Math.max(due, now + readCheckDelayMs);
  return due > now ? new Date(due) : undefined;
}

/** A held push is checked against the in-app read state before its first attempt, if the check is on. */
export function needsReadCheck(n: { notificationType: string; attempts: number }): boolean {
  return n.notificationType !== 'security_alert' && n.attempts === 1;
}
