import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { READ_STATE_MAX_KEYS } from '@community/service';
import { needsReadCheck } from '../domain/timing';
import type { PushMetrics } from '../metrics';
import * as ledger from '../store/ledger';

/** notification-service's read state, as ReadStateClient (@community/service) answers it. */
export interface ReadState {
  readKeys(userId: string, idempotencyKeys: string[]): Promise<Set<string>>;
}

export interface ReadCheckDeps {
  readState: ReadState;
  pool: Pool;
  metrics: PushMetrics;
  logger: Logger;
}

/** The ledger reason of a push not sent because its notification was read in the app first. */
export const READ_IN_APP_REASON = 'read_in_app: the notification was read in the app before the push was due';

/** Users checked at once by one poll. */
const CONCURRENCY = 8;

/**
 * Delay-then-check (docs/PUSH.md "Quiet hours and delay-then-check"): of claimed rows, the first
 * attempts of anything but a security alert are checked against notification-service, one call
 * per user (at most 100 keys each). A row whose notification was read is not pushed: `cancelled`
 * with READ_IN_APP_REASON. A check that fails pushes its rows anyway (a push too many beats a lost
 * one), with a warning and `push_read_checks_total{outcome="failed"}`. Answers the rows to send.
 */
export async function withoutReadInApp(deps: ReadCheckDeps, leases: ledger.Lease[]): Promise<ledger.Lease[]> {
  const byUser = new Map<string, ledger.Lease[]>();
  for (const lease of leases) {
    if (!needsReadCheck(lease)) continue;
    byUser.set(lease.userId, [...(byUser.get(lease.userId) ?? []), lease]);
  }
  if (byUser.size === 0) return leases;
  const dropped = new Set<string>();
  const users = [...byUser.entries()];
  let next = 0;
  const worker = async () => {
    while (next < users.length) {
      const [userId, mine] = users[next++];
      const read = await readKeys(deps, userId, [...new Set(mine.map((l) => l.idempotencyKey))]);
      for (const lease of mine) {
        if (!read.has(lease.idempotencyKey)) continue;
        dropped.add(lease.id);
        if (await ledger.markReadInApp(deps.pool, lease, READ_IN_APP_REASON)) {
          deps.logger.debug(
            { deliveryId: lease.id, idempotencyKey: lease.idempotencyKey },
            'read in the app: not pushed',
          );
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, users.length) }, worker));
  return leases.filter((l) => !dropped.has(l.id));
}

/** The user's keys read in the app; those of a failed call are left out (then: pushed). */
async function readKeys(deps: ReadCheckDeps, userId: string, keys: string[]): Promise<Set<string>> {
  const read = new Set<string>();
  for (let i = 0; i < keys.length; i += READ_STATE_MAX_KEYS) {
    const chunk = keys.slice(i, i + READ_STATE_MAX_KEYS);
    let answer: Set<string>;
    try {
      answer = await deps.readState.readKeys(userId, chunk);
    } catch (err) {
      deps.metrics.readChecks.inc({ outcome: 'failed' }, chunk.length);
      deps.logger.warn(
        { userId, keys: chunk.length, err: (err as Error).message },
        'read-state check failed: pushing the held notifications anyway',
      );
      continue;
    }
    const readHere = chunk.filter((k) => answer.has(k));
    for (const k of readHere) read.add(k);
    if (readHere.length > 0) deps.metrics.readChecks.inc({ outcome: 'read' }, readHere.length);
    if (chunk.length > readHere.length)
      deps.metrics.readChecks.inc({ outcome: 'unread' }, chunk.length - readHere.length);
  }
  return read;
}
