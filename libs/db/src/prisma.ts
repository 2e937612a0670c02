// The generated Prisma client over @prisma/adapter-pg (no native query engine), on its own entry
// point: `import { createPrisma } from '@community/db/prisma'`. The services run raw SQL through
// `@community/db` and never import this file, so they do not pay for loading the generated client.
// It is generated into ./generated/prisma (gitignored) by `npm run db:generate`; see docs/DATABASE.md.
import { PrismaPg } from '@prisma/adapter-pg';
import { poolConfig, type PoolOptions } from './pool';
import { PrismaClient } from './generated/prisma/client';

// PrismaClient (class and type), the Prisma namespace (Prisma.TransactionClient, Prisma.sql,
// Prisma.PrismaClientKnownRequestError, ...), model types (ProcessedEvent, ...) and enums.
export * from './generated/prisma/client';

/** A Prisma client for `databaseUrl` with its own connection pool. Call `$disconnect()` on shutdown. */
export function createPrisma(databaseUrl: string, opts: Omit<PoolOptions, 'logger'> = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(poolConfig(databaseUrl, opts)) });
}
