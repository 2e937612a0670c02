import type pg from 'pg';
import { eventually } from '@community/testing';
import { pendingWork, queueDepths, queueDepthsFast, readQueue, type BrokerMessage } from './checks';
import type { Deps } from './fleet';

// When the system has drained after a fault, and what is left in the DLQs for the checks.

/** Drained: no queue (DLQs aside) holds a message, no outbox row unsent, no email pending, no fan-out unfinished. */
export async function drainedNow(deps: Deps, db: pg.Pool): Promise<string | undefined> {
  // The management API's figures first (cheap, up to a second old); the exact count once they say empty.
  const busyIn = (depths: Map<string, number>) =>
    [...depths].filter(([q, n]) => !q.endsWith('.dlq') && n !== 0).map(([q, n]) => `${q}=${n}`);
  // The database first: a row the relay marks sent after this read has its message in a queue by
  // the queue reads below (it is marked only after the broker's confirm).
  const work = await pendingWork(db).catch((err: unknown) => err as Error);
  if (work instanceof Error) return `database: ${work.message}`;
  if (work.outbox > 0 || work.emails > 0 || work.fanouts > 0)
    return `${work.outbox} outbox rows unsent, ${work.emails} emails pending, ${work.fanouts} fan-out jobs/chunks unfinished`;
  const fast = await queueDepthsFast(deps.management).catch((err: unknown) => err as Error);
  if (fast instanceof Error) return `management API: ${fast.message}`;
  if (busyIn(fast).length > 0) return `queues ${busyIn(fast).join(', ')} (management API)`;
  const exact = await queueDepths(deps.rabbit.ctl, '/').catch((err: unknown) => err as Error);
  if (exact instanceof Error) return `rabbitmqctl: ${exact.message}`;
  // An unknown depth (NaN) is busy; so is a queue the management API lists and rabbitmqctl does not.
  const busy = busyIn(exact).concat(
    [...fast.keys()].filter((q) => !exact.has(q)).map((q) => `${q} missing from list_queues`),
  );
  if (busy.length > 0) return `queues ${busy.join(', ')} (rabbitmqctl)`;
  return undefined;
}

/**
 * Waits until the system is drained on two consecutive polls at least DRAIN_CONFIRM_MS apart, with
 * nothing busy in between: one empty reading can be a moment between two hops (a message acked by
 * one consumer whose next publish is not routed yet, a quorum queue whose count is not back after
 * start_app, a delayed retry about to come back).
 */
const DRAIN_CONFIRM_MS = 6000;
/** How long after the drain each app has to answer /readyz 200 again (a breach after that). */
export const READY_WITHIN_MS = 30_000;

export async function drain(deps: Deps, db: pg.Pool, timeoutMs: number): Promise<number> {
  let emptySince: number | undefined;
  let last = '';
  try {
    return await eventually(
      'drained (queues, outbox, emails, fan-outs)',
      async () => {
        const busy = await drainedNow(deps, db);
        if (busy !== undefined) {
          // An unknown depth is what an earlier version of this drain read as 0: worth seeing in the log.
          if (/NaN|missing/.test(busy) && busy !== last) console.log(`[chaos]   drain: depth unknown: ${busy}`);
          last = busy;
          emptySince = undefined;
          return false;
        }
        emptySince ??= Date.now();
        return Date.now() - emptySince >= DRAIN_CONFIRM_MS ? emptySince : false;
      },
      timeoutMs,
      250,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen busy: ${last}`);
  }
}

export async function readDlqs(deps: Deps): Promise<BrokerMessage[]> {
  const depths = await queueDepths(deps.rabbit.ctl, '/');
  const out: BrokerMessage[] = [];
  for (const [q, n] of depths) if (q.endsWith('.dlq') && n > 0) out.push(...(await readQueue(deps.management, q, n)));
  return out;
}
