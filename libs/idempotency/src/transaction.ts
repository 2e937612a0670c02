import type { Pool, PoolClient } from 'pg';

/**
 * One transaction on one pooled connection: BEGIN, `fn`, COMMIT — or ROLLBACK on any error.
 * The client goes back to the pool either way; a client whose ROLLBACK failed is destroyed
 * rather than returned, since its connection state is unknown.
 */
export async function withTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    client.release(broken);
  }
}

/** A unique-constraint violation (SQLSTATE 23505), optionally on a named constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: unknown; constraint?: unknown } | undefined;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
