import type { Logger } from 'pino';
import type { ScheduledJob } from '@community/db';
import type { ManagementTarget } from '@community/messaging';
import { FINDING_KINDS, watchdogFindings, type Finding } from '../domain/watchdog';
import type { ReconcilerMetrics } from '../metrics';
import { sampleQueues, type QueueSample } from '../store/broker';

export const WATCHDOG_JOB = 'watchdog.queues';

export interface Watchdog {
  job: ScheduledJob;
  /** The findings of the last sample (empty before the first). */
  current(): Finding[];
}

/**
 * Samples every queue through the management API at each run and reports what domain/watchdog.ts
 * finds: one gauge per (queue, kind) at 1 while reported (0 once it clears) and one warning log line
 * naming the queue when a finding appears. The samples are kept in memory by whichever replica
 * holds the job: after a leadership change the new holder needs `samples` runs before it reports
 * growth again (a queue without consumer is reported at once).
 */
export function createWatchdog(o: { target: ManagementTarget; workQueues: readonly string[]; samples: number; intervalMs: number; metrics: ReconcilerMetrics; logger: Logger }): Watchdog {
  const history: QueueSample[][] = [];
  let findings: Finding[] = [];
  const reported = new Set<string>();
  const job: ScheduledJob = {
    name: WATCHDOG_JOB,
    intervalMs: o.intervalMs,
    run: async ({ dryRun }) => {
      const sample = await sampleQueues(o.target);
      if (dryRun) return { queues: sample.length, findings: watchdogFindings([...history, sample], o.workQueues, o.samples).length };
      history.push(sample);
      if (history.length > o.samples) history.splice(0, history.length - o.samples);
      findings = watchdogFindings(history, o.workQueues, o.samples);
      const now = new Set(findings.map((f) => `${f.queue}|${f.kind}`));
      for (const f of findings) {
        o.metrics.watchdogFindings.set({ queue: f.queue, kind: f.kind }, 1);
        if (!reported.has(`${f.queue}|${f.kind}`)) o.logger.warn({ queue: f.queue, kind: f.kind }, `watchdog: ${f.detail}`);
      }
      for (const key of reported) {
        if (now.has(key)) continue;
        const [queue, kind] = key.split('|');
        o.metrics.watchdogFindings.set({ queue, kind }, 0);
        o.logger.info({ queue, kind }, `watchdog: ${queue} is no longer reported (${kind})`);
      }
      reported.clear();
      for (const key of now) reported.add(key);
      const counts: Record<string, number> = { queues: sample.length, findings: findings.length };
      for (const kind of FINDING_KINDS) counts[kind] = findings.filter((f) => f.kind === kind).length;
      return counts;
    },
  };
  return { job, current: () => findings };
}
