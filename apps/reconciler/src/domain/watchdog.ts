import { dlqName } from '@community/messaging';
import type { QueueSample } from './facts';

export type FindingKind = 'stalled' | 'no_consumer' | 'dlq_growing';
export const FINDING_KINDS: readonly FindingKind[] = ['stalled', 'no_consumer', 'dlq_growing'];

export interface Finding {
  queue: string;
  kind: FindingKind;
  detail: string;
}

/**
 * What the watchdog reports from the last samples of the broker's queues (oldest first), for each
 * work queue of the topology:
 *
 * - `no_consumer`: nobody consumed it in the last two samples (a stopped or crashed service; one
 *   sample alone may predate a consumer that just attached: the broker's figures lag a few seconds);
 * - `stalled`: its depth grew at every one of the last `n` samples while its ack count stayed the
 *   same (consumers attached but stuck: a hung handler, a poisoned prefetch);
 * - `dlq_growing`: its DLQ grew at every one of the last `n` samples (failures keep coming).
 *
 * "At every sample" rather than "overall" so a burst that is being worked off is not reported.
 */
export function watchdogFindings(
  history: readonly (readonly QueueSample[])[],
  workQueues: readonly string[],
  n: number,
): Finding[] {
  const latest = history[history.length - 1];
  if (!latest) return [];
  const window = history.slice(-n);
  /** The queue in each sample of the window; empty unless present in all `n` of them. */
  const series = (name: string): QueueSample[] => {
    const xs = window.map((s) => s.find((q) => q.name === name)).filter((x): x is QueueSample => x !== undefined);
    return xs.length >= n ? xs : [];
  };
  const grewEachTime = (xs: QueueSample[]) =>
    xs.length > 0 && xs.every((x, i) => i === 0 || x.messages > xs[i - 1].messages);
  const findings: Finding[] = [];
  for (const queue of workQueues) {
    const now = latest.find((q) => q.name === queue);
    const before = history.length >= 2 ? history[history.length - 2].find((q) => q.name === queue) : undefined;
    if (now && before && now.consumers === 0 && before.consumers === 0) {
      findings.push({
        queue,
        kind: 'no_consumer',
        detail: `${queue} has no consumer (${now.messages} messages waiting)`,
      });
    }
    const work = series(queue);
    if (grewEachTime(work) && work.every((x) => x.acked === work[0].acked)) {
      findings.push({
        queue,
        kind: 'stalled',
        detail: `${queue} grew from ${work[0].messages} to ${work[work.length - 1].messages} messages over ${n} samples with no ack`,
      });
    }
    const dlq = series(dlqName(queue));
    if (grewEachTime(dlq)) {
      findings.push({
        queue: dlqName(queue),
        kind: 'dlq_growing',
        detail: `${dlqName(queue)} grew from ${dlq[0].messages} to ${dlq[dlq.length - 1].messages} messages over ${n} samples`,
      });
    }
  }
  return findings;
}
