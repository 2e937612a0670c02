/**
 * The one filter the console, the API and the CLI share. Listing and bulk actions build their WHERE
 * clause from it with the same function, so a bulk action acts on exactly what the list showed
 * (Sidekiq #3243: "Delete All" ignored the filter). `asOf` (the highest id the preview saw, returned
 * by every list and dry run) pins the selection: messages dead-lettered after the preview are not
 * swept into the action.
 */
export const STATES = ['pending', 'replaying', 'replayed', 'discarded'] as const;
export type DlqState = (typeof STATES)[number];

export interface DlqFilter {
  /** The DLQ, e.g. `email-service.send.dlq`. */
  queue?: string;
  originalQueue?: string;
  /** A group's fingerprint. */
  group?: string;
  /** Free text: error message, message id, or body. */
  q?: string;
  errorClass?: string;
  messageType?: string;
  /** Default `pending`. */
  state?: DlqState;
  /** Dead-lettered at or after / before (ISO 8601). */
  since?: string;
  until?: string;
  /** Only rows with id ≤ asOf. */
  asOf?: string;
}

export const FILTER_KEYS = [
  'queue',
  'originalQueue',
  'group',
  'q',
  'errorClass',
  'messageType',
  'state',
  'since',
  'until',
  'asOf',
] as const;

export class FilterError extends Error {}

/** Keeps the known keys, drops empty ones, refuses malformed values with a reason. */
export function parseFilter(raw: Record<string, unknown> | undefined): DlqFilter {
  const out: DlqFilter = {};
  for (const key of FILTER_KEYS) {
    const v = raw?.[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string' && !(key === 'asOf' && typeof v === 'number'))
      throw new FilterError(`filter.${key} must be a string`);
    const s = String(v);
    if (key === 'state' && !(STATES as readonly string[]).includes(s))
      throw new FilterError(`filter.state must be one of ${STATES.join(', ')}; got '${s}'`);
    if (s.length > 500) throw new FilterError(`filter.${key} is longer than 500 characters`);
    // PostgreSQL refuses NUL in text: a query with one would fail (500), not match nothing.
    if (s.includes('\u0000')) throw new FilterError(`filter.${key} holds a NUL character`);
    if (key === 'since' || key === 'until') {
      // Passed to Postgres as the ISO form JavaScript read: Date accepts forms ('1', '+275760-…')
      // and years that timestamptz does not, which would fail the query instead of answering 400.
      const at = new Date(s);
      const year = at.getUTCFullYear();
      if (Number.isNaN(at.getTime()) || year < 1 || year > 9999)
        throw new FilterError(`filter.${key} must be an ISO 8601 time; got '${s.slice(0, 40)}'`);
      (out as Record<string, string>)[key] = at.toISOString();
      continue;
    }
    if (key === 'asOf' && !/^\d{1,18}$/.test(s))
      throw new FilterError(`filter.asOf must be a message id (digits); got '${s.slice(0, 40)}'`);
    (out as Record<string, string>)[key] = s;
  }
  return out;
}

/** `WHERE` conditions (joined with AND) and their parameters, numbered from `firstParam`. */
export function whereOf(filter: DlqFilter, firstParam = 1): { sql: string; params: unknown[] } {
  const conds: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (p: string) => string, value: unknown) => {
    params.push(value);
    conds.push(cond(`$${firstParam + params.length - 1}`));
  };
  add((p) => `m.state = ${p}::dlq_message_state`, filter.state ?? 'pending');
  if (filter.queue) add((p) => `m.queue = ${p}`, filter.queue);
  if (filter.originalQueue) add((p) => `m.original_queue = ${p}`, filter.originalQueue);
  if (filter.group) add((p) => `m.fingerprint = ${p}`, filter.group);
  if (filter.errorClass) add((p) => `m.error_class = ${p}`, filter.errorClass);
  if (filter.messageType) add((p) => `m.message_type = ${p}`, filter.messageType);
  if (filter.since) add((p) => `m.dead_lettered_at >= ${p}::timestamptz`, filter.since);
  if (filter.until) add((p) => `m.dead_lettered_at < ${p}::timestamptz`, filter.until);
  if (filter.asOf) add((p) => `m.id <= ${p}::bigint`, filter.asOf);
  if (filter.q) {
    add(
      (p) => `(m.error_message ILIKE ${p} OR m.message_id ILIKE ${p} OR encode(m.body, 'escape') ILIKE ${p})`,
      `%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
    );
  }
  return { sql: conds.join(' AND '), params };
}
