import type { Pool, PoolClient } from 'pg';

export type IsolationLevel = 'read committed' | 'repeatable read' | 'serializable';

export interface TransactionOptions {
  /**
   * Default: the server's (read committed). `repeatable read` gives every statement of the
   * transaction one snapshot, e.g. a page of rows and the version that describes exactly them.
   */
  isolation?: IsolationLevel;
  /** true: PostgreSQL refuses any write, and a repeatable-read reader takes no snapshot-conflict risk. */
  readOnly?: boolean;
  /**
   * false: COMMIT returns before its WAL record is flushed to disk (`synchronous_commit = off` for
   * this transaction only). A crash of PostgreSQL within ~3 × wal_writer_delay (600 ms) may lose
   * the transaction after it reported success, so use it only for writes that are safe to repeat,
   * such as bookkeeping of work that is itself idempotent. Default true.
   */
  synchronousCommit?: boolean;
}

const ISOLATION_SQL: Record<IsolationLevel, string> = {
  'read committed': ' ISOLATION LEVEL READ COMMITTED',
  'repeatable read': ' ISOLATION LEVEL REPEATABLE READ',
  serializable: ' ISOLATION LEVEL SERIALIZABLE',
};

/** The statement that opens a transaction with `options`: one simple query, so one round trip. */
export function beginStatement(options: TransactionOptions = {}): string {
  let sql = 'BEGIN';
  if (options.isolation !== undefined) {
    const level = ISOLATION_SQL[options.isolation];
    if (!level) throw new RangeError(`unknown isolation level "${String(options.isolation)}"`);
    sql += level;
  }
  if (options.readOnly) sql += ' READ ONLY';
  if (options.synchronousCommit === false) sql += '; SET LOCAL synchronous_commit TO off';
  return sql;
}

/**
 * One transaction on one pooled connection: BEGIN, `fn`, COMMIT — or ROLLBACK on any error.
 *
 * While the client is checked out the pool no longer listens for its errors, and a pg client emits
 * 'error' when its connection dies (Postgres restarted, the backend terminated), even between two
 * queries; with no listener that event crashes the process. So a listener is attached for as long
 * as `fn` holds the client. A client that saw such an error, or whose ROLLBACK failed, is destroyed
 * rather than returned, since its connection state is unknown; the caller gets the error.
 */
export async function withTransaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
export async function withTransaction<T>(pool: Pool, options: TransactionOptions, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
export async function withTransaction<T>(
  pool: Pool,
  optionsOrFn: TransactionOptions | ((tx: PoolClient) => Promise<T>),
  maybeFn?: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn as (tx: PoolClient) => Promise<T>];
  const begin = beginStatement(options);
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken ??= err);
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (!broken) await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
