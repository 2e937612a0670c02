import pg from 'pg';
import type { Logger } from 'pino';

export interface PoolOptions {
  /** Maximum number of connections in the pool (pg's default is 10). */
  max?: number;
  /**
   * Connections kept open once opened (pg's default is 0: every connection idle for 10 s closes).
   * pg-pool opens connections lazily and hands a new one to the request that asked for it, so a
   * burst after a quiet spell waits for connection set-up (a backend fork; 20–150 ms on a busy
   * machine). Serving paths with a latency target keep their pool open (docs/DATABASE.md "Pool").
   */
  min?: number;
  /** Shown in pg_stat_activity, so operators can tell which service holds a connection. */
  applicationName?: string;
  /** Where a broken idle connection is reported. Without one (tests) the error is only absorbed. */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * `pgbouncer=true` in a DATABASE_URL's query (Prisma's spelling of the same switch): the URL reaches
 * PostgreSQL through PgBouncer in transaction mode, where consecutive statements of one client may
 * run on different server sessions, so nothing may rely on session state (docs/DEPLOY.md
 * "Connection budget"). Such a pool sends no startup `options` (PgBouncer refuses the connection:
 * "unsupported startup parameter: options"), sends every statement unnamed (a named statement is
 * prepared on one server session and missing, or already there, on the next), and cancels through
 * the protocol's CancelRequest, which PgBouncer routes to the right server. LISTEN and the
 * scheduler's session advisory locks refuse such a URL or pool: they need a direct connection.
 */
export const TRANSACTION_POOLER_PARAM = 'pgbouncer';

/** The URL without the `pgbouncer` switch, and whether it was on; any other URL is returned as is. */
export function transactionPooler(connectionString: string): { url: string; pooled: boolean } {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return { url: connectionString, pooled: false };
  }
  if (!url.searchParams.has(TRANSACTION_POOLER_PARAM)) return { url: connectionString, pooled: false };
  const value = url.searchParams.get(TRANSACTION_POOLER_PARAM);
  url.searchParams.delete(TRANSACTION_POOLER_PARAM);
  return { url: url.toString(), pooled: value === 'true' };
}

/** The connection settings every pool of the project uses; also the Prisma adapter's (./prisma.ts). */
export function poolConfig(connectionString: string, opts: PoolOptions = {}): pg.PoolConfig {
  const { url, pooled } = transactionPooler(connectionString);
  return {
    connectionString: url,
    // The hot paths use named (prepared) statements to skip parsing; planning still happens at every
    // execution. A cached generic plan would be built once, possibly while a table was nearly empty,
    // and kept as it grows: the outbox relay's head scan went from ~10 ms to 2-4 s that way
    // (docs/DATABASE.md, "Prepared statements"). Behind a transaction pooler every statement is
    // unnamed, and an unnamed statement is always planned for its parameters: nothing to set.
    ...(pooled ? {} : { options: '-c plan_cache_mode=force_custom_plan' }),
    ...(opts.max !== undefined ? { max: opts.max } : {}),
    ...(opts.min !== undefined ? { min: opts.min } : {}),
    ...(opts.applicationName ? { application_name: opts.applicationName } : {}),
  };
}

/** A pg.Pool for raw (batched) SQL. Call `end()` on shutdown. */
export function createPgPool(databaseUrl: string, opts: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool(poolConfig(databaseUrl, opts));
  if (transactionPooler(databaseUrl).pooled) {
    TRANSACTION_POOLED.add(pool);
    // Every client of this pool, as it is created (before its first query): statements go unnamed.
    pool.on('connect', (client) => sendUnnamed(client));
  }
  // An idle connection that breaks (Postgres restarted, pg_terminate_backend, network) is emitted as
  // 'error' on the pool; unhandled, that event would crash the process. The pool has already
  // discarded the broken client and the next query opens a new one (or fails on its own, where the
  // caller handles it), so reporting it is all there is to do. A checked-out client is not covered
  // by this listener: withTransaction guards those.
  // pg-pool attaches the broken client to the error (`err.client`): logged as is, that would write
  // the client's connection state (including its cancel `secretKey`) into the log. Only the error's
  // own identity is logged.
  pool.on('error', (err) =>
    opts.logger?.warn({ err: idleErrorForLog(err) }, 'an idle database connection failed; the pool replaced it'),
  );
  return pool;
}

/** What of an idle connection's error is safe and useful to log: never the `client` pg-pool attaches. */
export function idleErrorForLog(err: Error): { type: string; message: string; code?: string } {
  const code = (err as { code?: unknown }).code;
  return { type: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}) };
}

/**
 * `pool.connect()` with `onError` attached to the client before anything else can run.
 *
 * Why not `const client = await pool.connect(); client.on('error', …)`: pg-pool takes its own
 * error listener off the client as it hands it out, and the awaiting code runs a microtask later.
 * A new connection is handed out from inside its socket's data handler (on ReadyForQuery), and the
 * parser goes on, synchronously, with the rest of the same chunk: when Postgres terminated the
 * backend right after startup (pg_terminate_backend, a restart), its FATAL ErrorResponse arrives in
 * that chunk and is emitted as 'error' on a client nobody listens to yet, which crashes the process.
 * The fault suite hit exactly this (demo-community-api exited during pg_terminate_backend ×5 under
 * load). pg-pool calls a callback synchronously, so attaching the listener there closes the gap.
 * The caller owns the listener from here: remove it before a normal release, keep it on a client
 * released with an error (it may still report its end).
 */
export function checkOutGuarded(pool: pg.Pool, onError: (err: Error) => void): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((err, client) => {
      if (err || !client) return reject(err ?? new Error('pg-pool returned no client'));
      client.on('error', onError);
      resolve(client);
    });
  });
}

const TRANSACTION_POOLED = new WeakSet<pg.Pool>();

/** A pool made from a `pgbouncer=true` URL: no session state may outlive a transaction on it. */
export function isTransactionPooled(pool: pg.Pool): boolean {
  return TRANSACTION_POOLED.has(pool);
}

/**
 * Drops the `name` of every plain query config this client is given, so pg sends the statement
 * unnamed (Parse/Bind/Execute of the unnamed statement, in one round trip as before). The cost is a
 * parse per execution, which the named statements were there to save.
 */
function sendUnnamed(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const unnamed = (...args: unknown[]) => {
    const [config, ...rest] = args;
    if (
      typeof config === 'object' &&
      config !== null &&
      Object.getPrototypeOf(config) === Object.prototype &&
      'name' in config
    ) {
      const withoutName: { name?: unknown } = { ...config };
      delete withoutName.name;
      return query(withoutName, ...rest);
    }
    return query(...args);
  };
  client.query = unnamed as typeof client.query;
}
