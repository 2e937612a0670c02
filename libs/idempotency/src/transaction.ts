import type { Pool, PoolClient } from 'pg';

export interface TransactionOptions {
  /**
   * false: COMMIT returns before its WAL record is flushed to disk (`synchronous_commit = off` for
   * this transaction only). A crash of PostgreSQL within ~3 × wal_writer_delay (600 ms) may lose
   * the transaction after it reported success, so use it only for writes that are safe to repeat,
   * such as bookkeeping of work that is itself idempotent. Default true.
   */
  synchronousCommit?: boolean;
}

/**
 * One transaction on one pooled connection: BEGIN, `fn`, COMMIT — or ROLLBACK on any error.
 * The client goes back to the pool either way; a client whose ROLLBACK failed is destroyed
 * rather than returned, since its connection state is unknown.
 */
export async function withTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
export async function withTransaction<T>(pool: Pool, options: TransactionOptions, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
export async function withTransaction<T>(
  pool: Pool,
  optionsOrFn: TransactionOptions | ((tx: PoolClient) => Promise<T>),
  maybeFn?: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn as (tx: PoolClient) => Promise<T>];
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    // One round trip either way: a simple query may carry both statements.
    await client.query(options.synchronousCommit === false ? 'BEGIN; SET LOCAL synchronous_commit TO off' : 'BEGIN');
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
