import { dlqName } from '@community/messaging';
import { QUEUES } from '@community/contracts';
import type { QueueSample } from './facts';

/**
 * The kinds of work the database knows is due and that only a message moves (docs/RECONCILER.md
 * "Lost work"). Each is re-driven from its rows by `POST /v1/admin/lost-work/<kind>/redrive`.
 *
 * - `event`: a community event its producer's outbox marked published, with no inbox row of the
 *   notification-service queue it routes to (notification-service.critical / .standard);
 * - `email`: a notification row (not withdrawn) with an immediate email decision and no ledger row:
 *   the row is the record of its notification.created, which notification-service emits after the
 *   row's commit (and again when the source event is redelivered);
 * - `digest`: one with a digest decision and no digest item;
 * - `email-lease`: an immediate ledger row left `sending` with its lease expired: the message that
 *   drives it (and would take the lease over) is gone;
 * - `fanout-chunk`: a feed-service fan-out chunk not done, of a job planned long ago.
 */
export const LOST_WORK_KINDS = ['event', 'email', 'digest', 'email-lease', 'fanout-chunk'] as const;
export type LostWorkKind = (typeof LOST_WORK_KINDS)[number];

/** Due rows of one kind that one queue should hold a message for, older than the grace period. */
export interface DueWork {
  kind: LostWorkKind;
  /** The work queue a message for each of these rows should be in. */
  queue: string;
  rows: number;
  /** ISO time of the oldest of them (when it was published / its notification created / its lease expired / planned). */
  oldest: string | null;
}

export interface LostQueue {
  queue: string;
  /** Due rows of every kind the queue should hold. */
  due: number;
  /** Messages the queue family holds (ready + unacked, of the queue, its retry tiers, its DLQ, and its sibling lanes). */
  held: number;
  /** due − held when positive: at least this many rows have no message anywhere. */
  lost: number;
  kinds: DueWork[];
}

export interface LostWorkVerdict {
  ok: boolean;
  /** Every queue with due rows, lost or not. */
  queues: LostQueue[];
  detail: string;
}

/**
 * Queues whose messages count as "holding" the due work of `queue`: the queue itself, its retry
 * tiers (`<queue>.retry.<delay>`) and its DLQ (`<queue>.dlq`), plus for email-service.send its
 * critical lane, which receives a second copy of every security alert.
 */
export function holdersOf(queue: string): string[] {
  return queue === QUEUES.emailSend ? [queue, QUEUES.emailSendCritical] : [queue];
}

const inFamily = (name: string, queue: string) =>
  name === queue || name.startsWith(`${queue}.retry.`) || name === dlqName(queue);

/** ready + unacked over every queue that may hold a message for `queue`'s due work. */
export function heldBy(queue: string, sample: readonly QueueSample[]): number {
  const holders = holdersOf(queue);
  return sample.filter((q) => holders.some((h) => inFamily(q.name, h))).reduce((n, q) => n + q.ready + q.unacked, 0);
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

const KIND_LABEL: Record<LostWorkKind, [string, string]> = {
  event: ['event without its inbox row', 'events without their inbox row'],
  email: ['immediate email without its ledger row', 'immediate emails without their ledger row'],
  digest: ['digest item not collected', 'digest items not collected'],
  'email-lease': ["delivery stuck 'sending' past its lease", "deliveries stuck 'sending' past their lease"],
  'fanout-chunk': ['fan-out chunk not done', 'fan-out chunks not done'],
};

/**
 * The lost-work rule, a pigeonhole count: each due row needs one message in its queue, and one
 * message can stand for at most one row, so when a queue's family holds fewer messages than it has
 * due rows, at least the difference has no message anywhere. The sample must be taken BEFORE the
 * rows are counted (store/lost-work.ts): a message consumed in between has written its row by the
 * time the rows are counted, so it is not counted as due; the rows are older than a grace period,
 * so a message still on its way to the queue (from a relay, or from notification-service right after
 * its commit) is not counted either.
 *
 * Never a false "lost" for a row whose message exists (that message is counted as held), but it
 * misses a loss while the queue holds as many unrelated messages (a burst behind it): it is a lower
 * bound, exact once the queue drains. docs/RECONCILER.md "Lost work" lists the remaining cases.
 */
export function evaluateLostWork(
  due: readonly DueWork[],
  sample: readonly QueueSample[] | { error: string },
  o: { graceMs: number },
): LostWorkVerdict {
  if ('error' in sample) {
    const rows = due.reduce((n, d) => n + d.rows, 0);
    return {
      ok: false,
      queues: [],
      detail: `cannot compare ${plural(rows, 'due row')} with the queues: RabbitMQ management API: ${sample.error}`,
    };
  }
  const byQueue = new Map<string, DueWork[]>();
  for (const d of due) if (d.rows > 0) byQueue.set(d.queue, [...(byQueue.get(d.queue) ?? []), d]);
  const queues: LostQueue[] = [...byQueue].map(([queue, kinds]) => {
    const total = kinds.reduce((n, k) => n + k.rows, 0);
    const held = heldBy(queue, sample);
    return { queue, due: total, held, lost: Math.max(0, total - held), kinds };
  });
  const lost = queues.filter((q) => q.lost > 0);
  const grace = `${Math.round(o.graceMs / 1000)} s`;
  const describe = (q: LostQueue) =>
    `${q.queue}: ${q.kinds.map((k) => plural(k.rows, ...KIND_LABEL[k.kind])).join(', ')} (due for over ${grace}), but the queue holds ${plural(q.held, 'message')}: at least ${q.lost.toLocaleString('en-US')} lost` +
    `; re-drive: ${q.kinds.map((k) => `npm run ops -- ${k.kind} redrive --since ${k.oldest ?? '<iso>'}`).join(', ')}`;
  const detail =
    lost.length > 0
      ? lost.map(describe).join('; ')
      : queues.length === 0
        ? 'every due row has its message in a queue'
        : `every due row may still have its message in a queue (${queues.map((q) => `${q.queue}: ${q.due} due, ${q.held} held`).join('; ')})`;
  return { ok: lost.length === 0, queues, detail };
}

/**
 * Whether the lost-work rule says `queue` lost messages: `ops why` then stops saying "queued" of a
 * row older than the grace period that has no trace of its message.
 */
export function lostFrom(verdict: LostWorkVerdict | undefined, queue: string): LostQueue | undefined {
  return verdict?.queues.find((q) => q.queue === queue && q.lost > 0);
}
