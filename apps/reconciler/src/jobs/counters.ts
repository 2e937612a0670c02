import type { Pool } from 'pg';
import { lastSucceededRun, type JobContext, type ScheduledJob } from '@community/db';
import type { ReconcilerMetrics } from '../metrics';
import { recountCounterBatch, type Drift } from '@community/notification-service';
import { readCursor, recordRepairs, saveCursor } from '../store/counters';

export const RECOUNT_RECENT_JOB = 'counters.recount-recent';
export const RECOUNT_SWEEP_JOB = 'counters.sweep';

export interface RecountSummary {
  checked: number;
  drifted: number;
  repaired: number;
  batches: number;
  [name: string]: number;
}

export interface RecountOptions {
  batchSize: number;
  /** Incremental: only users whose counter changed within this window. */
  recentMs?: number;
  userIds?: readonly string[];
  /** Only users up to this id, inclusive. */
  through?: string;
  /** Start after this id (default: the saved cursor, or the first user). */
  after?: string;
  dryRun: boolean;
  source: string;
  runId?: string | null;
  signal?: AbortSignal;
  /** Resume from, and record, the position of a sweep in reconciler_cursors under this name. */
  cursorName?: string;
  /** Every drift found, in order (the API returns them). */
  onDrift?: (drift: Drift) => void;
  /** After each batch: users checked and how long its transaction took (the benchmark's lock-hold figure). */
  onBatch?: (batch: { checked: number; ms: number }) => void;
}

/**
 * Recounts users batch after batch (keyset on user id, `batchSize` users per transaction, each
 * batch under its users' counter locks: notification-service's `recountCounterBatch`, with the
 * reconciler's audit row of each repair written in the same transaction). Between batches no lock
 * is held, so live writes wait at most one batch.
 */
export async function recount(pool: Pool, metrics: ReconcilerMetrics, opts: RecountOptions): Promise<RecountSummary> {
  const summary: RecountSummary = { checked: 0, drifted: 0, repaired: 0, batches: 0 };
  let after = opts.after ?? (opts.cursorName ? await readCursor(pool, opts.cursorName) : '');
  for (;;) {
    opts.signal?.throwIfAborted();
    const started = performance.now();
    const batch = await recountCounterBatch(pool, {
      after,
      limit: opts.batchSize,
      recentMs: opts.recentMs,
      userIds: opts.userIds,
      through: opts.through,
      dryRun: opts.dryRun,
      audit: (tx, repaired) => recordRepairs(tx, repaired, opts.source, opts.runId ?? null),
    });
    if (batch.last === null) break;
    opts.onBatch?.({ checked: batch.checked, ms: performance.now() - started });
    summary.batches += 1;
    summary.checked += batch.checked;
    summary.drifted += batch.drifts.length;
    if (!opts.dryRun) summary.repaired += batch.drifts.length;
    for (const d of batch.drifts) {
      metrics.driftAbs.observe(Math.abs(d.stored - d.recounted));
      opts.onDrift?.(d);
    }
    if (!opts.dryRun) metrics.repairs.inc(batch.drifts.length);
    after = batch.last;
    if (opts.cursorName && !opts.dryRun) await saveCursor(pool, opts.cursorName, after);
    if (batch.checked < opts.batchSize) break;
  }
  // A finished sweep starts again from the first user next time.
  if (opts.cursorName && !opts.dryRun) await saveCursor(pool, opts.cursorName, '');
  metrics.driftUsers.set(summary.drifted);
  return summary;
}

/** The drift the last real (not dry) run of a recount job found, for the status checklist. */
export async function lastRecount(pool: Pool): Promise<{ job: string; finishedAt: string; drifted: number } | null> {
  const run = await lastSucceededRun(pool, [RECOUNT_RECENT_JOB, RECOUNT_SWEEP_JOB]);
  return run
    ? { job: run.job, finishedAt: run.finishedAt.toISOString(), drifted: Number(run.counts.drifted ?? 0) }
    : null;
}

export interface CounterJobsOptions {
  metrics: ReconcilerMetrics;
  batchSize: number;
  recentIntervalMs: number;
  recentWindowMs: number;
  sweepIntervalMs: number;
}

/**
 * The incremental recount (users whose counter row changed within the window: every live write
 * sets updated_at) often, and the full sweep rarely, resumable from where it was cut short.
 */
export function counterJobs(o: CounterJobsOptions): ScheduledJob[] {
  return [
    {
      name: RECOUNT_RECENT_JOB,
      intervalMs: o.recentIntervalMs,
      run: ({ pool, signal, runId, dryRun }: JobContext) =>
        recount(pool, o.metrics, {
          batchSize: o.batchSize,
          recentMs: o.recentWindowMs,
          dryRun,
          source: RECOUNT_RECENT_JOB,
          runId,
          signal,
        }),
    },
    {
      name: RECOUNT_SWEEP_JOB,
      intervalMs: o.sweepIntervalMs,
      run: ({ pool, signal, runId, dryRun }: JobContext) =>
        recount(pool, o.metrics, {
          batchSize: o.batchSize,
          dryRun,
          source: RECOUNT_SWEEP_JOB,
          runId,
          signal,
          cursorName: RECOUNT_SWEEP_JOB,
        }),
    },
  ];
}
