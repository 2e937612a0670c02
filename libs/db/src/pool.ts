import pg from 'pg';
import type { Logger } from 'pino';

export interface PoolOptions {
  /** Maximum number of connections in the pool (pg's default is 10). */
  max?: number;
  /** Shown in pg_stat_activity, so operators can tell which service holds a connection. */
  applicationName?: string;
  /** Where a broken idle connection is reported. Without one (tests) the error is only absorbed. */
  logger?: Pick<Logger, 'warn'>;
}

/** The connection settings every pool of the project uses; also the Prisma adapter's (./prisma.ts). */
export function poolConfig(connectionString: string, opts: PoolOptions = {}): pg.PoolConfig {
  return {
    connectionString,
    // The hot paths use named (prepared) statements to skip parsing; planning still happens at every
    // execution. A cached generic plan would be built once, possibly while a table was nearly empty,
    // and kept as it grows: the outbox relay's head scan went from ~10 ms to 2-4 s that way
    // (docs/DATABASE.md, "Prepared statements").
    options: '-c plan_cache_mode=force_custom_plan',
    ...(opts.max !== undefined ? { max: opts.max } : {}),
    ...(opts.applicationName ? { application_name: opts.applicationName } : {}),
  };
}

/** A pg.Pool for raw (batched) SQL. Call `end()` on shutdown. */
export function createPgPool(databaseUrl: string, opts: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool(poolConfig(databaseUrl, opts));
  // An idle connection that breaks (Postgres restarted, pg_terminate_backend, network) is emitted as
  // 'error' on the pool; unhandled, that event would crash the process. The pool has already
  // discarded the broken client and the next query opens a new one (or fails on its own, where the
  // caller handles it), so reporting it is all there is to do. A checked-out client is not covered
  // by this listener: withTransaction guards those.
  // pg-pool attaches the broken client to the error (`err.client`): logged as is, that would write
  // the client's connection state (including its cancel `secretKey`) into the log. Only the error's
  // own identity is logged.
  pool.on('error', (err) => opts.logger?.warn({ err: idleErrorForLog(err) }, 'an idle database connection failed; the pool replaced it'));
  return pool;
}

/** What of an idle connection's error is safe and useful to log: never the `client` pg-pool attaches. */
export function idleErrorForLog(err: Error): { type: string; message: string; code?: string } {
  const code = (err as { code?: unknown }).code;
  return { type: err.name, message: err.message, ...(typeof code === 'string' ? { code } : {}) };
}
