// Prisma 7 configuration, shared by `prisma generate` and by our offline migration runner
// (scripts/db/migrate.ts), which loads this very file through @prisma/config.
//
// DATABASE_URL is read from process.env directly on purpose: `env()` from prisma/config throws
// when the variable is unset, which would break `prisma generate` on a machine without a database.
import { defineConfig } from 'prisma/config';

export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/community';

export default defineConfig({
  // A folder: each service keeps its models in a file of its own (prisma/schema/<area>.prisma).
  schema: 'prisma/schema',
  migrations: {
    path: 'prisma/migrations',
  },
  datasource: {
    url: process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
  },
});
