import type { Pool } from 'pg';
import type { ManagementTarget, Publisher } from '@community/messaging';
import { notificationHeaders } from '@community/contracts';
import { sendFanoutChunk } from '@community/feed-service';
import { evaluateLostWork, LOST_WORK_KINDS, type LostWorkKind, type LostWorkVerdict } from '../domain/lost-work';
import type { ReconcilerConfig } from '../config';
import { sampleQueues } from '../clients/broker';
import { countDue, dueRows, dueWindow, type DueAfter, type DueRow, type Window } from '../store/lost-work';

export interface LostWorkSettings extends DueAfter {
  /** How far back the check looks for due rows (LOST_WORK_LOOKBACK_MS); a re-drive takes any window. */
  lookbackMs: number;
}

export const lostWorkSettings = (c: ReconcilerConfig): LostWorkSettings => ({
  graceMs: c.LOST_WORK_GRACE_MS,
  lookbackMs: c.LOST_WORK_LOOKBACK_MS,
  leaseGraceMs: c.STUCK_LEASE_GRACE_MS,
  fanoutAfterMs: c.STUCK_FANOUT_AFTER_MS,
});

/**
 * The lost-work check: the queues are sampled FIRST, then the due rows counted (the order the rule
 * of domain/lost-work.ts relies on: a message consumed in between has written its row by then).
 */
export async function checkLostWork(
  pool: Pool,
  management: ManagementTarget,
  s: LostWorkSettings,
  now: Date,
): Promise<LostWorkVerdict> {
  const sample = await sampleQueues(management).catch((err: Error) => ({ error: err.message }));
  const due = await countDue(pool, (kind) => dueWindow(kind, now, s.lookbackMs, s), LOST_WORK_KINDS);
  return evaluateLostWork(due, sample, { graceMs: s.graceMs });
}

/** Messages published at once (their confirms overlap; bounded memory and broker load). */
const PARALLEL = 32;

export interface RedriveResult {
  kind: LostWorkKind;
  dryRun: boolean;
  since: string;
  until: string;
  /** Due rows in the window (at most `limit`). */
  matched: number;
  /** More due rows than `limit` remain in the window: run again (after this one, with --since). */
  more: boolean;
  republished: number;
  /**
   * Rows that cannot be re-driven from the database, with why (an expired lease whose notification
   * row is gone or withdrawn: there is nothing to announce any more).
   */
  skipped: { id: string; reason: string }[];
  /** The first rows, for the operator to see what the dry run matched. */
  sample: { id: string; queue: string; at: string; idempotencyKey?: string }[];
  oldest: string | null;
  newest: string | null;
}

/**
 * Re-drives one kind of due work from the rows the database has: each row's message is published
 * again, straight to the queue that should hold it (through `<queue>.direct`, never the topic
 * exchange, so no other bound queue gets a copy), with its original message id, as the stuck-work
 * job re-publishes fan-out chunks. Safe whether or not the message was really lost: consumers
 * deduplicate on the event id (notification-service's inbox) and the idempotency key (email-service's
 * ledger, one row per key and channel; the digest item's key), and a done fan-out chunk is skipped.
 */
export async function redrive(
  pool: Pool,
  publisher: Publisher | undefined,
  kind: LostWorkKind,
  w: Window,
  o: { apply: boolean; limit: number },
): Promise<RedriveResult> {
  const { rows, more } = await dueRows(pool, kind, w, o.limit);
  const skipped: RedriveResult['skipped'] = [];
  const publishable: DueRow[] = [];
  for (const r of rows) {
    if (r.kind !== 'fanout-chunk' && r.payload === null)
      skipped.push({ id: r.id, reason: r.unavailable ?? 'no envelope to re-drive it with' });
    else publishable.push(r);
  }
  let republished = 0;
  if (o.apply) {
    if (!publisher) throw new Error('the reconciler runs without messaging: nothing to publish with');
    for (let i = 0; i < publishable.length; i += PARALLEL) {
      await Promise.all(publishable.slice(i, i + PARALLEL).map((r) => publishOne(publisher, r)));
      republished += Math.min(PARALLEL, publishable.length - i);
    }
  }
  return {
    kind,
    dryRun: !o.apply,
    since: w.since.toISOString(),
    until: w.until.toISOString(),
    matched: rows.length,
    more,
    republished,
    skipped,
    sample: rows.slice(0, 20).map((r) => ({
      id: r.id,
      queue: r.queue,
      at: r.at.toISOString(),
      ...(r.idempotencyKey ? { idempotencyKey: r.idempotencyKey } : {}),
    })),
    oldest: rows[0]?.at.toISOString() ?? null,
    newest: rows[rows.length - 1]?.at.toISOString() ?? null,
  };
}

function publishOne(publisher: Publisher, r: DueRow): Promise<void> {
  if (r.kind === 'fanout-chunk') {
    const [postId, chunkNo] = [r.id.slice(0, r.id.lastIndexOf('#')), Number(r.id.slice(r.id.lastIndexOf('#') + 1))];
    return sendFanoutChunk(publisher, { postId, chunkNo }, `reconciler:redrive:${postId}`);
  }
  const envelope = r.payload as unknown as {
    id: string;
    type: string;
    version: number;
    occurredAt: string;
    correlationId: string;
  };
  // The producer's own headers (notification-type on notification.created), as notification-service
  // sets them when it emits.
  const headers = notificationHeaders(envelope);
  return publisher.publish(envelope, { exchange: '', routingKey: r.queue, ...(headers ? { headers } : {}) });
}
