import pg, { type Pool, type PoolClient } from 'pg';
import { connect } from 'node:net';
import { checkOutGuarded, isTransactionPooled } from './pool';

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
  /**
   * `SET LOCAL statement_timeout` for this transaction only: PostgreSQL cancels any one statement
   * that runs longer (SQLSTATE 57014). The server-side backstop of `signal`: it holds even when the
   * cancel request cannot reach the server. Whole milliseconds, at least 1.
   */
  statementTimeoutMs?: number;
  /**
   * The caller's deadline (a message handler's `ctx.signal`). When it aborts, the running statement
   * is cancelled (`pg_cancel_backend` from a connection of its own, so it works with the pool
   * exhausted), the transaction is rolled back and never committed, and withTransaction rejects
   * with the signal's reason, but only once the transaction has ended: a caller bounding how many
   * transactions run at once can trust that its slot is free when this returns. Already aborted:
   * nothing is checked out. `fn` should not start another statement after the abort; if it does,
   * that statement runs (bounded by `statementTimeoutMs`) and is rolled back.
   */
  signal?: AbortSignal;
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
  if (options.statementTimeoutMs !== undefined) {
    const ms = Math.ceil(options.statementTimeoutMs);
    if (!Number.isFinite(ms) || ms < 1)
      throw new RangeError(`statementTimeoutMs must be at least 1, got ${String(options.statementTimeoutMs)}`);
    sql += `; SET LOCAL statement_timeout = ${ms}`;
  }
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
export async function withTransaction<T>(
  pool: Pool,
  options: TransactionOptions,
  fn: (tx: PoolClient) => Promise<T>,
): Promise<T>;
export async function withTransaction<T>(
  pool: Pool,
  optionsOrFn: TransactionOptions | ((tx: PoolClient) => Promise<T>),
  maybeFn?: (tx: PoolClient) => Promise<T>,
): Promise<T> {
  const [options, fn] =
    typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn as (tx: PoolClient) => Promise<T>];
  const begin = beginStatement(options);
  const { signal } = options;
  signal?.throwIfAborted();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken ??= err);
  // The listener is on before pg-pool's is off (checkOutGuarded says why the order matters).
  const client = await checkOutGuarded(pool, onError);
  // Set on abort; awaited before anything else is sent on this connection, so the cancel can never
  // land on the ROLLBACK or, after release, on the next user's statement.
  let cancelled: Promise<void> | undefined;
  const onAbort = () => (cancelled = cancelBackend(pool, client));
  try {
    if (signal?.aborted) throw signal.reason; // aborted while waiting for a connection
    signal?.addEventListener('abort', onAbort, { once: true });
    await client.query(begin);
    const result = await fn(client);
    // After the deadline nothing commits, even if every statement finished: the caller has already
    // been told to retry, and a late commit would race the retry.
    signal?.throwIfAborted();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await cancelled;
    if (!broken) await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw signal?.aborted ? signal.reason : err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await cancelled;
    // A connection a cancel was sent to is not reused: a cancel that arrived late would hit whoever
    // ran the next statement on it.
    const destroy = broken ?? (cancelled ? new Error('a statement on this connection was cancelled') : undefined);
    // A destroyed client keeps the listener: it may still report its end, and nobody else listens.
    if (!destroy) client.removeListener('error', onError);
    client.release(destroy);
  }
}

/**
 * Cancels whatever `client`'s backend is running, from a short-lived connection of its own (the
 * pool may have none to spare). Best effort: if it cannot connect, the transaction's
 * statement_timeout still ends the statement.
 */
async function cancelBackend(pool: Pool, client: PoolClient): Promise<void> {
  const pid = (client as PoolClient & { processID?: number | null }).processID;
  if (typeof pid !== 'number') return;
  // Through PgBouncer, processID is PgBouncer's own key for this client, not a server pid:
  // pg_cancel_backend would hit nothing, or whichever backend has that number. PgBouncer forwards
  // the protocol's CancelRequest to the server session running this client's statement.
  if (isTransactionPooled(pool)) return sendCancelRequest(client, pid);
  const canceller = new pg.Client(pool.options);
  canceller.on('error', () => undefined); // its only job is one statement; a failure changes nothing
  try {
    await canceller.connect();
    await canceller.query('SELECT pg_cancel_backend($1)', [pid]);
  } catch {
    // The statement timeout is the backstop (TransactionOptions.statementTimeoutMs).
  } finally {
    await canceller.end().catch(() => undefined);
  }
}

/**
 * The protocol's CancelRequest (length 16, code 80877102, the backend key) on a connection of its
 * own, as libpq's PQcancel and pg's own Client#cancel send it: unencrypted, and the server closes
 * the connection without an answer. Best effort, like cancelBackend.
 *
 * The socket is not half-closed after the request, as libpq does not: it waits for the other side
 * to close. PgBouncer 1.18 first opens a server connection to carry the cancel on, and drops the
 * request when its client has sent EOF meanwhile ("client unexpected eof").
 */
function sendCancelRequest(client: PoolClient, pid: number): Promise<void> {
  const { host, port, secretKey } = client as PoolClient & { host: string; port: number; secretKey?: number };
  if (typeof secretKey !== 'number') return Promise.resolve();
  const request = Buffer.alloc(16);
  request.writeInt32BE(16, 0);
  request.writeInt32BE(80877102, 4);
  request.writeInt32BE(pid, 8);
  request.writeInt32BE(secretKey, 12);
  return new Promise<void>((resolve) => {
    const socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
    socket.setTimeout(5_000, () => socket.destroy());
    socket.once('connect', () => socket.write(request));
    socket.once('error', () => undefined);
    socket.once('close', () => resolve());
  });
}
