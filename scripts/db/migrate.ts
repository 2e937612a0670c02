// Offline replacement for `prisma migrate deploy|status|dev --create-only`.
//
//   node -r @swc-node/register scripts/db/migrate.ts <deploy|status|create> [options]
//   npm run db:migrate | npm run db:status | npm run db:migrate:create -- --name add_x
//
// It drives Prisma's WebAssembly schema engine through @prisma/adapter-pg, so it needs no native binary and
// no download, and keeps the standard prisma/migrations layout and _prisma_migrations table: native
// `prisma migrate deploy` can take over anywhere it is available. See docs/DATABASE.md.
import { parseArgs } from 'node:util';
import { LOCAL_DEFAULTS } from '@community/config';
import { create, deploy, resolve, status } from './commands';
import { DatabaseSetupError } from './database';
import { describeEngineError } from './engine';

const USAGE = `Usage: migrate.ts <command> [options]

Commands:
  deploy   Create the database if missing and apply all pending migrations.
  status   Show applied/pending migrations, failed or edited ones, and schema drift.
           Exit code 0 only when the database is in sync with the migrations folder.
  create   Generate a migration from the changes in prisma/schema/ (--name required).
  resolve  After repairing a failed migration by hand: --rolled-back <name> (deploy re-runs it)
           or --applied <name> (deploy skips it).

Options:
  --name <name>            Migration name (create).
  --apply                  Also apply the created migration (create).
  --empty                  Create a migration even without schema changes, to edit by hand (create).
  --applied <name>         Mark a failed migration as applied (resolve).
  --rolled-back <name>     Mark a failed migration as rolled back (resolve).
  --skip-drift             Do not check for drift; avoids needing a shadow database (status).
  --schema <path>          Prisma schema file or folder (default: from prisma.config.ts).
  --migrations-dir <path>  Migrations folder (default: from prisma.config.ts; env DB_MIGRATIONS_DIR).
  --config <path>          Prisma config file (default: ./prisma.config.ts).

Environment:
  DATABASE_URL      Target database (default ${LOCAL_DEFAULTS.DATABASE_URL}).
  DB_MIGRATE_DEBUG  Set to 1 to print the schema engine's trace.`;

export async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string', short: 'n' },
      apply: { type: 'boolean' },
      empty: { type: 'boolean' },
      applied: { type: 'string' },
      'rolled-back': { type: 'string' },
      'skip-drift': { type: 'boolean' },
      schema: { type: 'string' },
      'migrations-dir': { type: 'string' },
      config: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const common = { schema: values.schema, migrationsDir: values['migrations-dir'], configFile: values.config };
  switch (command) {
    case 'deploy':
      return deploy(common);
    case 'status':
      return status({ ...common, skipDrift: values['skip-drift'] });
    case 'create':
      return create({ ...common, name: values.name ?? '', apply: values.apply, empty: values.empty });
    case 'resolve':
      return resolve({ ...common, applied: values.applied, rolledBack: values['rolled-back'] });
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}\n`);
      return 2;
  }
}

function formatError(error: unknown): string {
  if (error instanceof DatabaseSetupError) return `Error: ${error.message}`;
  const stack = process.env.DB_MIGRATE_DEBUG ? `\n${(error as Error)?.stack ?? ''}` : '';
  return `Error: ${describeEngineError(error)}${stack}`;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${formatError(error)}\n`);
      process.exit(1);
    },
  );
}
