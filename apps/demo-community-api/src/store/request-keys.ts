import type { Pool, PoolClient } from 'pg';

/**
 * community_request_keys: the answer to each write, per actor and request key (producer-side dedup,
 * docs/CONTRACT.md "Producer-side dedup (Idempotency-Key)"). One row's life, all in the transaction
 * of the write it answers (http/answer-once.ts):
 *
 *   (none) ──claim──▶ claimed (status NULL) ──storeAnswer──▶ answered ──COMMIT──▶ visible to retries
 *      ▲                   │ ROLLBACK (the write failed)               │ expires_at passes
 *      └───────────────────┴───────────── purgeExpired / a new claim takes it over ◀┘
 *
 * `now` is the caller's clock when it has one (tests), otherwise the database's `now()`, the one
 * clock every replica shares: `COALESCE($now::timestamptz, now())`.
 */

type Db = Pick<Pool | PoolClient, 'query'>;

export interface StoredAnswer {
  requestHash: string;
  status: number;
  body: unknown;
}

export interface Claim {
  actor: string;
  key: string;
  requestHash: string;
  ttlMs: number;
  now?: Date;
}

/**
 * Claims (actor, key) for the caller's transaction: inserts the row, or takes over one that has
 * expired. True when claimed. False when a live row holds the key: it was committed, since a claim
 * that meets another transaction's uncommitted row waits on the primary key until that transaction
 * ends (then sees its row if it committed, or claims if it rolled back).
 */
export async function claim(tx: PoolClient, c: Claim): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO community_request_keys AS k (actor, key, request_hash, created_at, expires_at)
     VALUES ($1, $2, $3, COALESCE($5::timestamptz, now()),
             COALESCE($5::timestamptz, now()) + $4::float8 * interval '1 millisecond')
     ON CONFLICT (actor, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status = NULL, body = NULL,
           created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
       WHERE k.expires_at <= EXCLUDED.created_at`,
    [c.actor, c.key, c.requestHash, c.ttlMs, c.now ?? null],
  );
  return rowCount === 1;
}

/** The answer stored under (actor, key) while it lives; undefined when there is none (or it expired). */
export async function liveAnswer(db: Db, actor: string, key: string, now?: Date): Promise<StoredAnswer | undefined> {
  const { rows } = await db.query<{ request_hash: string; status: number | null; body: unknown }>(
    `SELECT request_hash, status, body FROM community_request_keys
      WHERE actor = $1 AND key = $2 AND expires_at > COALESCE($3::timestamptz, now())`,
    [actor, key, now ?? null],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  // Unreachable for a committed row (claim and answer share a transaction): a broken invariant, a 500.
  if (row.status === null) throw new Error(`community_request_keys (${actor}, ${key}) is committed without an answer`);
  return { requestHash: row.request_hash, status: row.status, body: row.body };
}

/** Stores the answer of the claimed row, in the transaction that claimed it. */
export async function storeAnswer(
  tx: PoolClient,
  a: { actor: string; key: string; status: number; body: unknown },
): Promise<void> {
  const { rowCount } = await tx.query(
    'UPDATE community_request_keys SET status = $3, body = $4::jsonb WHERE actor = $1 AND key = $2',
    [a.actor, a.key, a.status, JSON.stringify(a.body ?? null)],
  );
  if (rowCount !== 1) throw new Error(`community_request_keys (${a.actor}, ${a.key}) was not claimed`);
}

/**
 * Ends the fingerprint window of the actor's other requests: a fingerprint answers a repeat of the
 * actor's latest write only. Without this, follow → unfollow → follow within the window would answer
 * the second follow with the first one's "following: true" and write nothing, leaving the user
 * unfollowed. Rows another transaction holds are skipped (SKIP LOCKED), never waited for: two
 * concurrent writes of one actor cannot deadlock here.
 */
export async function forgetOtherFingerprints(tx: PoolClient, actor: string, keep: string): Promise<void> {
  await tx.query(
    `DELETE FROM community_request_keys WHERE actor = $1 AND key IN (
       SELECT key FROM community_request_keys
        WHERE actor = $1 AND key LIKE 'fp:%' AND key <> $2
        FOR UPDATE SKIP LOCKED)`,
    [actor, keep],
  );
}

/**
 * Deletes expired rows, oldest first, `batchSize` per statement (each its own short transaction),
 * until fewer than a batch are left or `signal` aborts. Rows a claim is taking over are skipped.
 * With `dryRun`, only counts them.
 */
export async function purgeExpired(
  pool: Db,
  o: { batchSize: number; now?: Date; signal?: AbortSignal; dryRun?: boolean },
): Promise<{ deleted: number }> {
  const now = o.now ?? null;
  if (o.dryRun) {
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM community_request_keys WHERE expires_at <= COALESCE($1::timestamptz, now())',
      [now],
    );
    return { deleted: rows[0].n };
  }
  let deleted = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    const { rowCount } = await pool.query(
      `DELETE FROM community_request_keys WHERE (actor, key) IN (
         SELECT actor, key FROM community_request_keys
          WHERE expires_at <= COALESCE($1::timestamptz, now())
          ORDER BY expires_at LIMIT $2
          FOR UPDATE SKIP LOCKED)`,
      [now, o.batchSize],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < o.batchSize) return { deleted };
  }
}
