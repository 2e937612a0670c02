// Prisma 7 configuration, shared by `prisma generate` and by our offline migration runner
// (scripts/db/migrate.ts), which loads this very file through @prisma/config.
//
// DATABASE_URL is read from process.env directly on purpose: `env()` from prisma/config throws
// when the variable is unset, which would break `prisma generate` on a machine without a database.
import { defineConfig } from 'prisma/config';
// A relative path, not @community/config: Prisma's config loader does not read tsconfig paths.
import { LOCAL_DEFAULTS } from './libs/config/src/common';

export default defineConfig({
  // A folder: each service keeps its models in a file of its own (prisma/schema/<area>.prisma).
  schema: 'prisma/schema',
  migrations: {
    path: 'prisma/migrations',
  },
  datasource: {
    url: process.env.DATABASE_URL || LOCAL_DEFAULTS.DATABASE_URL,
  },
});
