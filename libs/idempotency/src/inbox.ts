import sql, { type Sql } from 'sql-template-tag';

/**
 * The inbox: one `processed_events` row per (consumer, event id), inserted in the SAME transaction
 * as the consumer's effects. A redelivery of the event finds the row and has no second effect; if
 * the effects roll back, so does the row, and the redelivery does the work.
 *
 * The inbox catches redelivery of the same event id. A *new* event id for the same business fact
 * (a producer retry that built a new envelope) is caught by the business idempotency key's unique
 * constraint in the consumer's own tables — both are needed.
 */

/**
 * The batch claim as a SQL fragment (sql-template-tag), for a consumer that puts it in a WITH clause
 * of its own first statement so that claiming costs no round trip of its own:
 * sql`WITH claimed AS (${inboxClaim(consumer, ids)}) ...`. The fragment carries its own values, so
 * the caller never chooses placeholder numbers. The CTE yields `event_id` for each id claimed now.
 * Rules: it runs in the same transaction as the effects, and only the claimed (fresh) events may
 * have effects. An id repeated within the batch (a redelivery that raced its original) is claimed once.
 */
export function inboxClaim(consumer: string, eventIds: readonly string[]): Sql {
  // In id order: two batches holding the same ids (a redelivery racing its original) wait for each
  // other on the same key first instead of deadlocking on keys taken in opposite orders.
  return sql`INSERT INTO processed_events (consumer, event_id)
          SELECT ${consumer}::text, id FROM unnest(${[...new Set(eventIds)]}::text[]) AS t(id) ORDER BY id
          ON CONFLICT DO NOTHING
          RETURNING event_id`;
}

/**
 * The claim as a statement of its own, for a consumer whose effects are not one statement (an
 * erasure across tables): the ids claimed now, in the caller's transaction; an id already in the
 * inbox is not among them, and then the caller has no effect.
 */
export async function claimEvents(
  tx: { query(sql: string, values: unknown[]): Promise<{ rows: Array<{ event_id: string }> }> },
  consumer: string,
  eventIds: readonly string[],
): Promise<string[]> {
  const claim = inboxClaim(consumer, eventIds);
  const res = await tx.query(claim.text, claim.values);
  return res.rows.map((r) => r.event_id);
}
