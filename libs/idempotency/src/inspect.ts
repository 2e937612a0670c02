/** Binds a value as a parameter of the statement being built and returns its placeholder (`$n`). */
export type BindParam = (value: unknown) => string;

/**
 * "`consumer` has no inbox row for this event" as a predicate, for a query of another owner's rows
 * that looks for work no consumer did (the reconciler's lost-work check composes it with the
 * outbox's published rows). This lib owns `processed_events`, so the SQL that names it is here.
 */
export function notProcessedSql(bind: BindParam, consumer: string, eventId: string): string {
  return `NOT EXISTS (SELECT 1 FROM processed_events p WHERE p.consumer = ${bind(consumer)} AND p.event_id = ${eventId})`;
}
