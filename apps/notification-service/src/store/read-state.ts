import type { Pool } from 'pg';

/**
 * Of `idempotencyKeys`, those whose in-app notification `userId` has read (docs/NOTIFICATIONS.md
 * "Delivery timing"): the senders ask before a held email or push goes out. A row counts as read
 * when its own `read_at` is set, which is exactly "its item was read after it joined it": reading a
 * group reads every member it has then (store/inbox.ts), a member that joins later arrives unread,
 * and `read-all` up to a version leaves later members unread. Marked unread again, or never shown in
 * the app (in-app off for its type): not read. A key that is not this user's, or unknown, or
 * replaced by a higher-ranked notification of its slot (a mention after a reply): not in the answer.
 * One index lookup per key (the unique idempotency_key), read-only, no lock.
 */
export async function readIdempotencyKeys(pool: Pool, userId: string, idempotencyKeys: string[]): Promise<string[]> {
  const res = await pool.query<{ idempotency_key: string }>({
    name: 'ns-read-idempotency-keys',
    text: `SELECT idempotency_key FROM notification_items
            WHERE idempotency_key = ANY($2::text[]) AND user_id = $1 AND read_at IS NOT NULL
            ORDER BY idempotency_key`,
    values: [userId, [...new Set(idempotencyKeys)]],
  });
  return res.rows.map((r) => r.idempotency_key);
}
