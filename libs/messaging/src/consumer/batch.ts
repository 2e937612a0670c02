import type { Logger } from 'pino';
import type { RuntimeMetrics } from '../metrics';
import type { BatchSink } from './batcher';
import { withDeadline } from './deadline';
import { deriveContext, DELIVERY, type RuntimeContext } from './delivery';
import type { ConsumerSeries } from './middleware/metrics';
import type { BatchHandler, Handler, MessageContext, Outcome } from './types';

/** A message waiting in (or running with) a batch; settles its own pipeline when the batch is done. */
export interface BatchEntry<E> {
  event: E;
  ctx: MessageContext;
  resolve(outcome: Outcome | void): void;
  reject(err: unknown): void;
}

/**
 * The innermost handler of a batch consumer's per-message pipeline: the message joins a batch, and
 * its pipeline resumes with its own result once the batch handler returned. So every per-message
 * middleware (failure routing, metrics, an app's own) works unchanged in batch mode.
 */
export function joinBatch<E>(batcher: BatchSink<BatchEntry<E>>): Handler<E> {
  return (event, ctx) => new Promise((resolve, reject) => batcher.add({ event, ctx, resolve, reject }));
}

export interface BatchRunnerOptions<E> {
  handle: BatchHandler<E>;
  timeoutMs: number;
  /** The consumer's forced-shutdown signal. */
  shutdown: AbortSignal;
  logger: Logger;
  queue: string;
  handler: string;
  metrics: RuntimeMetrics;
  series: ConsumerSeries;
}

/**
 * Runs one batch under the deadline. A throw fails every entry with that error; otherwise each entry
 * gets its own result (an Error fails only that message). Each message is acked only after this,
 * i.e. after the batch handler's transaction committed.
 */
export function batchRunner<E>(
  o: BatchRunnerOptions<E>,
): (entries: BatchEntry<E>[], release: () => void) => Promise<void> {
  const { handle, timeoutMs, shutdown, logger, queue, handler } = o;
  return async (entries, release) => {
    o.metrics.batchSize.observe({ queue, handler }, entries.length);
    const startedAt = performance.now();
    let results: ReadonlyArray<Outcome | Error | void> | void;
    try {
      results = await withDeadline(timeoutMs, shutdown, (deadline) => {
        const signal = deadline.signal; // a batch handler always gets it: it runs a transaction
        const items = entries.map((e) => ({ event: e.event, ctx: deriveContext(e.ctx, { signal: () => signal }) }));
        return handle(items, { logger, signal, queue, handler, release });
      });
    } catch (err) {
      for (const e of entries) e.reject(err);
      return;
    }
    const seconds = (performance.now() - startedAt) / 1000;
    entries.forEach((e, i) => {
      const r = results ? results[i] : undefined;
      if (r instanceof Error) return e.reject(r);
      const type = (e.ctx as Partial<RuntimeContext>)[DELIVERY]?.msg.properties.type as string | undefined;
      o.series.done(type, r ?? 'processed')[1].observe(seconds);
      e.resolve(r);
    });
  };
}
