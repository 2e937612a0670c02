import { randomUUID } from 'node:crypto';
import { RECONCILER_RECOUNT_TYPE } from '@community/contracts';
import { PermanentError } from '@community/messaging';

/**
 * A message on reconciler.low-priority: recount the users with ids in (after, through], one batch
 * (docs/RECONCILER.md "The low-priority queue"). Same envelope fields as the contract's events, so
 * the runtime, the DLQ console and the logs treat it like any other message.
 */
export interface RecountRequest {
  id: string;
  type: typeof RECONCILER_RECOUNT_TYPE;
  version: 1;
  occurredAt: string;
  correlationId: string;
  data: { after: string; through: string; requestedBy: string };
}

export function recountRequest(
  range: { after: string; through: string },
  requestedBy: string,
  correlationId: string,
  now: Date,
): RecountRequest {
  return {
    id: randomUUID(),
    type: RECONCILER_RECOUNT_TYPE,
    version: 1,
    occurredAt: now.toISOString(),
    correlationId,
    data: { ...range, requestedBy },
  };
}

/** The consumer's validator: anything else is dead-lettered at once with the reason. */
export function parseRecountRequest(body: Buffer): RecountRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new PermanentError('reconciler.low-priority: the body is not JSON', 'VALIDATION_FAILED');
  }
  const m = parsed as Partial<RecountRequest>;
  const d = m?.data as Partial<RecountRequest['data']> | undefined;
  if (
    m?.type !== RECONCILER_RECOUNT_TYPE ||
    typeof m.id !== 'string' ||
    typeof m.correlationId !== 'string' ||
    typeof m.occurredAt !== 'string' ||
    typeof d?.after !== 'string' ||
    typeof d.through !== 'string' ||
    typeof d.requestedBy !== 'string' ||
    !(d.after < d.through)
  ) {
    throw new PermanentError(
      'reconciler.low-priority: expected a reconciler.recount with data { after < through, requestedBy }',
      'VALIDATION_FAILED',
    );
  }
  return m as RecountRequest;
}

/**
 * Splits sorted user ids into ranges (after, through] of at most `size` ids: the first range starts
 * after '' (before every id), each next one after the previous one's last id.
 */
export function planRanges(sortedBoundaries: readonly string[]): { after: string; through: string }[] {
  const ranges: { after: string; through: string }[] = [];
  let after = '';
  for (const through of sortedBoundaries) {
    ranges.push({ after, through });
    after = through;
  }
  return ranges;
}
