import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { optOutSyncRetryDelayMs } from '../domain/retry-schedules';
import type { EmailMetrics } from '../metrics';
import * as suppressions from '../store/suppressions';
import type { PreferencesClient } from './preferences-client';
import type { UnsubscribeScope } from './token';

export interface SyncDeps {
  pool: Pool;
  preferences: PreferencesClient;
  metrics: EmailMetrics;
  logger: Logger;
}

/** Pushes one opt-out to notification-service and records the outcome (never throws). */
export async function syncOne(
  deps: SyncDeps,
  userId: string,
  scope: UnsubscribeScope,
  attempts: number,
  now: Date,
): Promise<boolean> {
  try {
    await deps.preferences.optOut(userId, scope);
    await suppressions.markSynced(deps.pool, userId, scope);
    deps.metrics.suppressionSyncs.inc({ outcome: 'synced' });
    return true;
  } catch (err) {
    const message = (err as Error).message;
    await suppressions
      .markSyncFailed(deps.pool, userId, scope, message, new Date(now.getTime() + optOutSyncRetryDelayMs(attempts)))
      .catch(() => undefined);
    deps.metrics.suppressionSyncs.inc({ outcome: 'failed' });
    deps.logger.warn(
      { userId, scope, attempts, err: message },
      'could not update preferences in notification-service; will retry',
    );
    return false;
  }
}

/** Scheduler step: retries every opt-out that has not reached notification-service yet. */
export async function syncDueSuppressions(deps: SyncDeps, now: Date, limit = 100): Promise<number> {
  const due = await suppressions.claimDueSyncs(deps.pool, now, limit, 60_000);
  let synced = 0;
  for (const s of due) {
    if (await syncOne(deps, s.userId, s.scope as UnsubscribeScope, s.syncAttempts, now)) synced += 1;
  }
  return synced;
}
