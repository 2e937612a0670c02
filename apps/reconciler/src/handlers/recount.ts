import type { Handler } from '@community/messaging';
import type { Pool } from 'pg';
import type { RecountRequest } from '../domain/requests';
import { recount } from '../jobs/counters';
import type { ReconcilerMetrics } from '../metrics';

/**
 * reconciler.low-priority: one range of an operator's full recount (`ops counters recount`, planned
 * into ranges by domain/requests.ts), recounted and repaired batch by batch. Its consumer takes one
 * at a time, so a full recount never holds more than one batch of counter locks.
 */
export function recountRangeHandler(deps: {
  pool: Pool;
  metrics: ReconcilerMetrics;
  batchSize: number;
}): Handler<RecountRequest> {
  return async (req, ctx) => {
    const summary = await recount(deps.pool, deps.metrics, {
      batchSize: deps.batchSize,
      after: req.data.after,
      through: req.data.through,
      dryRun: false,
      source: `queue:${req.data.requestedBy}`,
      signal: ctx.signal,
    });
    ctx.logger.info({ ...summary, after: req.data.after, through: req.data.through }, 'recount batch done');
    return 'processed';
  };
}
