import type { Logger } from 'pino';
import type { EmailMetrics } from '../metrics';
import type { SuppressionStore } from '../store/suppressions';
import type { PreferencesClient } from './preferences-client';
import type { UnsubscribeScope } from './token';

export interface SyncDeps {
  suppressions: SuppressionStore;
  preferences: PreferencesClient;
  metrics: EmailMetrics;
  logger: Logger;
}

/** Next try after a failed push to notification-service: 10 s, 20 s, 40 s, … capped at 1 h. */
export function syncBackoffMs(attempts: number): number {
  return Math.min(3_600_000, 10_000 * 2 ** Math.max(0, attempts - 1));
}

/** Pushes one opt-out to notification-service and records the outcome (never throws). */
export async function syncOne(deps: SyncDeps, userId: string, scope: UnsubscribeScope, attempts: number, now: Date): Promise<boolean> {
  try {
    await deps.preferences.optOut(userId, scope);
    await deps.suppressions.markSynced(userId, scope);
    deps.metrics.suppressionSyncs.inc({ outcome: 'synced' });
    return true;
  } catch (err) {
    const message = (err as Error).message;
    await deps.suppressions.markSyncFailed(userId, scope, message, new Date(now.getTime() + syncBackoffMs(attempts))).catch(() => undefined);
    deps.metrics.suppressionSyncs.inc({ outcome: 'failed' });
    deps.logger.warn({ userId, scope, attempts, err: message }, 'could not update preferences in notification-service; will retry');
    return false;
  }
}

/** Scheduler step: retries every opt-out that has not reached notification-service yet. */
export async function syncDueSuppressions(deps: SyncDeps, now: Date, limit = 100): Promise<number> {
  const due = await deps.suppressions.claimDueSyncs(now, limit, 60_000);
  let synced = 0;
  for (const s of due) {
    if (await syncOne(deps, s.userId, s.scope as UnsubscribeScope, s.syncAttempts, now)) synced += 1;
  }
  return synced;
}
