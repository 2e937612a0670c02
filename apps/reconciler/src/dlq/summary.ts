import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { managementRequest, type ManagementTarget } from '@community/messaging';
import { listGroups, summaryByQueue, type GroupRow, type QueueSummary } from './store';

export interface DlqSummary {
  queues: Array<
    QueueSummary & {
      /** Still in the broker's DLQ, not yet read into the console (null: unknown). */ inBroker: number | null;
    }
  >;
  totalPending: number;
  topCauses: GroupRow[];
  /** DLQs the ingest is reading right now (a DLQ missing here is not declared yet, or the broker is down). */
  consuming: string[];
  /** The `dlq` line of `ops status`: failing while any DLQ holds a pending dead letter. */
  check: { name: 'dlq'; ok: boolean; value: number; threshold: number; runbook: string };
}

export const DLQ_RUNBOOK = 'docs/RUNBOOK.md#check-dlq';

/** Messages sitting in a DLQ on the broker, from the management API; null when it cannot answer. */
async function brokerDepth(target: ManagementTarget, queue: string): Promise<number | null> {
  try {
    const res = await managementRequest(
      target,
      'GET',
      `/queues/${encodeURIComponent(target.vhost)}/${encodeURIComponent(queue)}`,
    );
    if (!res.ok) return null;
    const body = (await res.json()) as { messages?: number };
    return typeof body.messages === 'number' ? body.messages : null;
  } catch {
    return null;
  }
}

export async function buildSummary(deps: {
  pool: Pool;
  management: ManagementTarget;
  dlqs: ReadonlyArray<{ dlq: string; originalQueue: string }>;
  consuming: () => string[];
  logger: Logger;
  /** Pending dead letters tolerated before the check fails (default 0). */
  threshold?: number;
}): Promise<DlqSummary> {
  const [rows, top, inBroker] = await Promise.all([
    summaryByQueue(deps.pool),
    listGroups(deps.pool, {}, 5),
    Promise.all(deps.dlqs.map((d) => brokerDepth(deps.management, d.dlq))),
  ]);
  const byQueue = new Map(rows.map((r) => [r.queue, r]));
  const known = new Set(deps.dlqs.map((d) => d.dlq));
  const queues = deps.dlqs.map((d, i) => ({
    queue: d.dlq,
    originalQueue: d.originalQueue,
    pending: byQueue.get(d.dlq)?.pending ?? 0,
    oldestDeadLetteredAt: byQueue.get(d.dlq)?.oldestDeadLetteredAt ?? null,
    oldestAgeSeconds: byQueue.get(d.dlq)?.oldestAgeSeconds ?? null,
    lastDeadLetteredAt: byQueue.get(d.dlq)?.lastDeadLetteredAt ?? null,
    groups: byQueue.get(d.dlq)?.groups ?? 0,
    inBroker: inBroker[i],
  }));
  // Rows of a DLQ no longer in the topology still count: they are someone's lost messages.
  for (const r of rows)
    if (!known.has(r.queue)) queues.push({ ...r, originalQueue: r.queue.replace(/\.dlq$/, ''), inBroker: null });
  const totalPending = queues.reduce((n, q) => n + q.pending, 0);
  const threshold = deps.threshold ?? 0;
  return {
    queues,
    totalPending,
    topCauses: top,
    consuming: deps.consuming(),
    check: { name: 'dlq', ok: totalPending <= threshold, value: totalPending, threshold, runbook: DLQ_RUNBOOK },
  };
}
