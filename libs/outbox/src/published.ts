import type { Pool } from 'pg';

/**
 * Whether the outbox holds these events, and when the relay's publish of each was confirmed by the
 * broker (null: it still waits), by the unique event id. An event absent from the map was never
 * written, or retention purged its sent row (OUTBOX_RETENTION_DAYS). Read only.
 */
export async function outboxSentAt(
  pool: Pick<Pool, 'query'>,
  eventIds: readonly string[],
): Promise<Map<string, Date | null>> {
  const res = await pool.query<{ event_id: string; sent_at: Date | null }>(
    'SELECT event_id::text, sent_at FROM outbox_messages WHERE event_id = ANY($1::uuid[])',
    [[...eventIds]],
  );
  return new Map(res.rows.map((r) => [r.event_id, r.sent_at]));
}
