import type { Pool } from 'pg';

/**
 * When each of `consumers` handled `eventId` (its inbox row), by primary key: one probe per
 * consumer, however large the inbox is. A consumer that has not handled it, or whose row retention
 * already purged (INBOX_RETENTION_DAYS), is absent. Read only; the inbox's writes are `inboxClaim`.
 */
export async function processedAtBy(
  pool: Pick<Pool, 'query'>,
  consumers: readonly string[],
  eventId: string,
): Promise<Map<string, Date>> {
  const res = await pool.query<{ consumer: string; processed_at: Date }>(
    'SELECT consumer, processed_at FROM processed_events WHERE consumer = ANY($1::text[]) AND event_id = $2',
    [[...consumers], eventId],
  );
  return new Map(res.rows.map((r) => [r.consumer, r.processed_at]));
}
