// Database access for every service: the generated Prisma client over @prisma/adapter-pg (no native query
// engine), and a plain pg.Pool for batched raw SQL (e.g. `INSERT ... SELECT * FROM unnest(...) ON CONFLICT
// DO NOTHING`, which TOOLCHAIN.md measured ~25x faster than one transaction per event).
//
// The client is generated into ./generated/prisma (gitignored) by `npm run db:generate`; run it after
// changing prisma/schema/. Schema and migrations: docs/DATABASE.md.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client';

// PrismaClient (class and type), the Prisma namespace (Prisma.TransactionClient, Prisma.sql,
// Prisma.PrismaClientKnownRequestError, ...), model types (ProcessedEvent, ...) and enums.
export * from './generated/prisma/client';

export type PoolOptions = {
  /** Maximum number of connections in the pool (pg's default is 10). */
  max?: number;
  /** Shown in pg_stat_activity, so operators can tell which service holds a connection. */
  applicationName?: string;
};

function poolConfig(connectionString: string, opts: PoolOptions): pg.PoolConfig {
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

/** A Prisma client for `databaseUrl` with its own connection pool. Call `$disconnect()` on shutdown. */
export function createPrisma(databaseUrl: string, opts: PoolOptions = {}): PrismaClient {
  const adapter = new PrismaPg(poolConfig(databaseUrl, opts));
  return new PrismaClient({ adapter });
}

/** A pg.Pool for raw (batched) SQL. Call `end()` on shutdown. */
export function createPgPool(databaseUrl: string, opts: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool(poolConfig(databaseUrl, opts));
  // An idle connection that breaks (server restart, network) is emitted as 'error' on the pool; unhandled,
  // that event would crash the process. The pool already discards the broken client and the next query
  // opens a new one or fails on its own, so there is nothing more to do here.
  pool.on('error', () => undefined);
  return pool;
}
export { classifyPgError, sqlStateOf } from './classify';
