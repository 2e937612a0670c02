import type { Logger } from 'pino';
import type { ScheduledJob } from '@community/db';
import type { ManagementTarget } from '@community/messaging';
import { FINDING_KINDS, watchdogFindings, type Finding } from '../domain/watchdog';
import type { ReconcilerMetrics } from '../metrics';
import { sampleQueues } from '../clients/broker';
import { evaluateLostWork, LOST_WORK_KINDS, type LostWorkVerdict } from '../domain/lost-work';
import { countDue, dueWindow } from '../store/lost-work';
import type { LostWorkSettings } from './lost-work';
import type { QueueSample } from '../domain/facts';

export const WATCHDOG_JOB = 'watchdog.queues';

export interface Watchdog {
  job: ScheduledJob;
  /** The findings of the last sample (empty before the first). */
  current(): Finding[];
  /** The lost-work verdict of the last run (undefined before the first, or without `lostWork`). */
  lostWork(): LostWorkVerdict | undefined;
}

/**
 * Samples every queue through the management API at each run and reports what domain/watchdog.ts
 * finds: one gauge per (queue, kind) at 1 while reported (0 once it clears) and one warning log line
 * naming the queue when a finding appears. The samples are kept in memory by whichever replica
 * holds the job: after a leadership change the new holder needs `samples` runs before it reports
 * growth again (a queue without consumer is reported at once).
 */
export function createWatchdog(o: {
  target: ManagementTarget;
  workQueues: readonly string[];
  samples: number;
  intervalMs: number;
  metrics: ReconcilerMetrics;
  logger: Logger;
  /** Also run the lost-work check on each sample (domain/lost-work.ts): a gauge per queue and a warning naming it. */
  lostWork?: LostWorkSettings;
  clock?: () => Date;
}): Watchdog {
  const history: QueueSample[][] = [];
  let findings: Finding[] = [];
  let lost: LostWorkVerdict | undefined;
  const lostReported = new Map<string, number>();
  const clock = o.clock ?? (() => new Date());
  const reported = new Set<string>();
  const job: ScheduledJob = {
    name: WATCHDOG_JOB,
    intervalMs: o.intervalMs,
    run: async ({ pool, dryRun }) => {
      const sample = await sampleQueues(o.target);
      // Rows counted after the sample: the order the lost-work rule relies on.
      const settings = o.lostWork;
      const lostNow = settings
        ? evaluateLostWork(
            await countDue(pool, (kind) => dueWindow(kind, clock(), settings.lookbackMs, settings), LOST_WORK_KINDS),
            sample,
            settings,
          )
        : undefined;
      if (dryRun)
        return {
          queues: sample.length,
          findings: watchdogFindings([...history, sample], o.workQueues, o.samples).length,
        };
      history.push(sample);
      if (history.length > o.samples) history.splice(0, history.length - o.samples);
      findings = watchdogFindings(history, o.workQueues, o.samples);
      const now = new Set(findings.map((f) => `${f.queue}|${f.kind}`));
      for (const f of findings) {
        o.metrics.watchdogFindings.set({ queue: f.queue, kind: f.kind }, 1);
        if (!reported.has(`${f.queue}|${f.kind}`))
          o.logger.warn({ queue: f.queue, kind: f.kind }, `watchdog: ${f.detail}`);
      }
      for (const key of reported) {
        if (now.has(key)) continue;
        const [queue, kind] = key.split('|');
        o.metrics.watchdogFindings.set({ queue, kind }, 0);
        o.logger.info({ queue, kind }, `watchdog: ${queue} is no longer reported (${kind})`);
      }
      reported.clear();
      for (const key of now) reported.add(key);
      if (lostNow) {
        lost = lostNow;
        for (const q of lostNow.queues) {
          o.metrics.lostWork.set({ queue: q.queue }, q.lost);
          // Once per loss, and again when it grows: a purge mid-burst is reported as it happens.
          if (q.lost > (lostReported.get(q.queue) ?? 0))
            o.logger.warn(
              {
                queue: q.queue,
                due: q.due,
                held: q.held,
                lost: q.lost,
                kinds: q.kinds.map((k) => `${k.kind}:${k.rows}`),
              },
              `watchdog: lost work: at least ${q.lost} due rows of ${q.queue} have no message in any queue (runbook: docs/RUNBOOK.md#check-lost-work)`,
            );
          if (q.lost > 0) lostReported.set(q.queue, q.lost);
        }
        for (const [queue] of lostReported) {
          if (lostNow.queues.some((q) => q.queue === queue && q.lost > 0)) continue;
          lostReported.delete(queue);
          o.metrics.lostWork.set({ queue }, 0);
          o.logger.info({ queue }, `watchdog: no lost work in ${queue} any more`);
        }
      }
      const counts: Record<string, number> = { queues: sample.length, findings: findings.length };
      if (lostNow) counts.lost_work = lostNow.queues.reduce((n, q) => n + q.lost, 0);
      for (const kind of FINDING_KINDS) counts[kind] = findings.filter((f) => f.kind === kind).length;
      return counts;
    },
  };
  return { job, current: () => findings, lostWork: () => lost };
}
