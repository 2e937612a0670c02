// The commands of the offline migration runner. Each mirrors the Prisma CLI command it replaces
// (same engine calls in the same order, same wording where it helps), and returns a process exit code.
//
//   deploy  ~ prisma migrate deploy (+ creates the database when missing)
//   status  ~ prisma migrate status (+ checksum and drift report)
//   create  ~ prisma migrate dev --create-only --name X (non-interactive)
//   resolve ~ prisma migrate resolve --applied X | --rolled-back X (recovering from a failed migration)
import path from 'node:path';
import type { MigrationList } from '@prisma/schema-engine-wasm';
import { resolveConfig, type MigrateOptions, type ResolvedConfig } from './config';
import { databaseName, ensureDatabase, probeDatabase, redactUrl, runSql } from './database';
import { describeEngineError, openEngine, type EngineSession } from './engine';
import { readMigrationsList, writeMigration } from './migrations-dir';

export type Reporter = {
  info(line: string): void;
  warn(line: string): void;
};

export const consoleReporter: Reporter = {
  info: (line) => process.stdout.write(`${line}\n`),
  warn: (line) => process.stderr.write(`${line}\n`),
};

function bullet(names: string[]): string {
  return names.map((n) => `  - ${n}`).join('\n');
}

function describeFolder(config: ResolvedConfig, list: MigrationList): string {
  const rel = path.relative(process.cwd(), config.migrationsDir) || '.';
  const n = list.migrationDirectories.length;
  return n === 0 ? `No migration found in ${rel}` : `${n} migration${n > 1 ? 's' : ''} found in ${rel}`;
}

async function withEngine<T>(config: ResolvedConfig, fn: (session: EngineSession) => Promise<T>): Promise<T> {
  const session = await openEngine({
    databaseUrl: config.databaseUrl,
    shadowDatabaseUrl: config.shadowDatabaseUrl,
    schemaFiles: config.schemaFiles,
    // DB_MIGRATE_DEBUG=1 shows the engine's own tracing (each migration script as it is applied, timings).
    log: process.env.DB_MIGRATE_DEBUG ? (line) => process.stderr.write(`[schema-engine] ${line}\n`) : undefined,
  });
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

function header(config: ResolvedConfig, out: Reporter): void {
  out.info(`Datasource: PostgreSQL database "${databaseName(config.databaseUrl)}" at ${redactUrl(config.databaseUrl)}`);
}

/** Applies every pending migration; creates the database first when it does not exist. */
export async function deploy(options: MigrateOptions = {}, out: Reporter = consoleReporter): Promise<number> {
  const config = await resolveConfig(options);
  header(config, out);
  if (await ensureDatabase(config.databaseUrl)) out.info(`Created database "${databaseName(config.databaseUrl)}".`);
  const list = await readMigrationsList(config.migrationsDir, config.shadowDbInitScript);
  out.info(describeFolder(config, list));

  return withEngine(config, async ({ engine }) => {
    // Native `migrate deploy` only warns about edited migrations; so do we (status exits non-zero on them).
    const diagnosis = await engine.diagnoseMigrationHistory({
      migrationsList: list,
      optInToShadowDatabase: false,
      filters: config.filters,
    });
    if (diagnosis.editedMigrationNames.length > 0) {
      out.warn(
        `Warning: migration(s) modified after they were applied (checksum mismatch):\n${bullet(diagnosis.editedMigrationNames)}`,
      );
    }
    // The engine serialises concurrent deployers itself (pg_advisory_lock) and refuses to continue past a
    // failed migration (P3009), exactly like native `prisma migrate deploy`.
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: list, filters: config.filters });
    if (appliedMigrationNames.length === 0) {
      out.info('No pending migrations to apply. Database is already in sync with the migrations folder.');
    } else {
      out.info(`The following migration(s) have been applied:\n${bullet(appliedMigrationNames)}`);
      out.info('All migrations have been successfully applied.');
    }
    return 0;
  });
}

type AppliedRow = { migration_name: string; finished_at: Date | null; rolled_back_at: Date | null };

/**
 * Reports applied and pending migrations, failed or edited ones, diverging histories and schema drift.
 * Exit code 0 only when the database is exactly at the head of the migrations folder.
 */
export async function status(
  options: MigrateOptions & { skipDrift?: boolean } = {},
  out: Reporter = consoleReporter,
): Promise<number> {
  const config = await resolveConfig(options);
  header(config, out);
  const list = await readMigrationsList(config.migrationsDir, config.shadowDbInitScript);
  out.info(describeFolder(config, list));
  if ((await probeDatabase(config.databaseUrl)) === 'missing') {
    out.warn(
      `Database "${databaseName(config.databaseUrl)}" does not exist. Run \`npm run db:migrate\` to create it and apply all migrations.`,
    );
    return 1;
  }

  return withEngine(config, async ({ engine }) => {
    const problems: string[] = [];
    const diagnosis = await engine.diagnoseMigrationHistory({
      migrationsList: list,
      optInToShadowDatabase: false,
      filters: config.filters,
    });

    if (!diagnosis.hasMigrationsTable) {
      out.warn('The database has no _prisma_migrations table: it is not managed by migrations yet.');
      problems.push('no migrations table');
    } else {
      const rows = await runSql<AppliedRow>(
        config.databaseUrl,
        'SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY started_at, migration_name',
      );
      const applied = rows.filter((r) => r.finished_at && !r.rolled_back_at).map((r) => r.migration_name);
      out.info(applied.length ? `Applied:\n${bullet(applied)}` : 'Applied: none');
    }

    const history = diagnosis.history;
    if (history?.diagnostic === 'databaseIsBehind') {
      out.warn(
        `Pending (not yet applied):\n${bullet(history.unappliedMigrationNames)}\nRun \`npm run db:migrate\` to apply them.`,
      );
      problems.push('pending migrations');
    } else if (history?.diagnostic === 'migrationsDirectoryIsBehind') {
      out.warn(
        `Applied in the database but missing from the migrations folder:\n${bullet(history.unpersistedMigrationNames)}`,
      );
      problems.push('migrations folder is behind the database');
    } else if (history?.diagnostic === 'historiesDiverge') {
      out.warn(
        `The migrations folder and the database history diverge after ${history.lastCommonMigrationName ?? '(the beginning)'}.\n` +
          `Not applied:\n${bullet(history.unappliedMigrationNames)}\nOnly in the database:\n${bullet(history.unpersistedMigrationNames)}`,
      );
      problems.push('diverging histories');
    } else {
      out.info('Pending: none');
    }

    if (diagnosis.failedMigrationNames.length > 0) {
      out.warn(
        `Failed migration(s):\n${bullet(diagnosis.failedMigrationNames)}\n` +
          'Repair the database by hand, then record it with `node -r @swc-node/register scripts/db/migrate.ts resolve --rolled-back <name>`\n' +
          '(deploy re-runs it) or `--applied <name>` (deploy skips it); see docs/DATABASE.md.',
      );
      problems.push('failed migrations');
    }
    if (diagnosis.editedMigrationNames.length > 0) {
      out.warn(
        `Checksum mismatch: migration(s) modified after they were applied:\n${bullet(diagnosis.editedMigrationNames)}\n` +
          'Restore the applied version of the file and put the change in a new migration.',
      );
      problems.push('edited migrations');
    }

    // Drift: replay the applied history into a shadow database and compare it with the real schema.
    if (options.skipDrift) {
      out.info('Drift check skipped (--skip-drift).');
    } else if (diagnosis.hasMigrationsTable) {
      try {
        const { action } = await engine.devDiagnostic({ migrationsList: list, filters: config.filters });
        if (action.tag === 'reset') {
          out.warn(
            `The schema engine reports the database out of sync with its migration history:\n${action.reason.trim()}`,
          );
          problems.push('drift');
        } else {
          out.info('Drift: none (the database schema matches its applied migrations).');
        }
      } catch (error) {
        // Typically a role without CREATEDB: report it, but the history checks above still stand.
        out.warn(`Drift check skipped, the shadow database could not be used: ${describeEngineError(error)}`);
      }
    }

    if (problems.length === 0) {
      out.info('Database schema is up to date!');
      return 0;
    }
    out.warn(`Not in sync: ${problems.join(', ')}.`);
    return 1;
  });
}

/** A name the CLI would accept: lower-case words joined by underscores. */
export function slugifyMigrationName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 200);
}

/**
 * Writes a new migration with the difference between the migrations folder and the Prisma schema.
 * Like `prisma migrate dev --create-only`, it first brings the development database up to date, and it
 * refuses to run on a database that drifted from its history. `apply` applies the new migration too;
 * `empty` writes a migration even without schema changes, for hand-written SQL.
 */
export async function create(
  options: MigrateOptions & { name: string; apply?: boolean; empty?: boolean },
  out: Reporter = consoleReporter,
): Promise<number> {
  const migrationName = slugifyMigrationName(options.name ?? '');
  if (!migrationName) {
    out.warn('A migration name is required: npm run db:migrate:create -- --name add_something');
    return 2;
  }
  const config = await resolveConfig(options);
  header(config, out);
  if (await ensureDatabase(config.databaseUrl)) out.info(`Created database "${databaseName(config.databaseUrl)}".`);
  const schema = { files: config.schemaFiles.map(([file, content]) => ({ path: file, content })) };

  return withEngine(config, async ({ engine }) => {
    let list = await readMigrationsList(config.migrationsDir, config.shadowDbInitScript);
    const { action } = await engine.devDiagnostic({ migrationsList: list, filters: config.filters });
    if (action.tag === 'reset') {
      out.warn(
        `${action.reason.trim()}\n\nThe development database must be reset before a migration can be generated. ` +
          `Drop it (dropdb ${databaseName(config.databaseUrl)}) and run \`npm run db:migrate\`; all its data will be lost.`,
      );
      return 1;
    }

    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: list, filters: config.filters });
    if (appliedMigrationNames.length > 0) {
      out.info(`Applied pending migration(s) first:\n${bullet(appliedMigrationNames)}`);
      // In the wasm engine only devDiagnostic can reach a shadow database (it alone receives the adapter
      // factory); evaluateDataLoss and createMigration read the schema of the migrations folder from a cache
      // that devDiagnostic fills for the migrations *applied* at the time. Those just changed, so run it again
      // or they fail with "PostgreSQL shadow DB must be provided through an external factory".
      await engine.devDiagnostic({ migrationsList: list, filters: config.filters });
    }

    const loss = await engine.evaluateDataLoss({ migrationsList: list, schema, filters: config.filters });
    if (loss.unexecutableSteps.length > 0 && !options.empty) {
      out.warn(
        `Changes that cannot be executed on the current database:\n${bullet(loss.unexecutableSteps.map((s) => `Step ${s.stepIndex}: ${s.message}`))}\n` +
          'Use --empty to write an empty migration and edit it by hand.',
      );
      return 1;
    }
    if (loss.warnings.length > 0) {
      out.warn(`Warnings (review the SQL before applying):\n${bullet(loss.warnings.map((w) => w.message))}`);
    }

    const generated = await engine.createMigration({
      draft: Boolean(options.empty),
      migrationName,
      migrationsList: list,
      schema,
      filters: config.filters,
    });
    if (generated.migrationScript === null) {
      out.info('No schema change found: the migrations folder already matches the Prisma schema. Nothing created.');
      return 0;
    }
    const file = await writeMigration(config.migrationsDir, {
      ...generated,
      migrationScript: generated.migrationScript,
    });
    out.info(`Created ${path.relative(process.cwd(), file)}`);

    if (options.apply) {
      list = await readMigrationsList(config.migrationsDir, config.shadowDbInitScript);
      const applied = await engine.applyMigrations({ migrationsList: list, filters: config.filters });
      out.info(`Applied:\n${bullet(applied.appliedMigrationNames)}`);
    } else {
      out.info('Review it, then run `npm run db:migrate` to apply it.');
    }
    return 0;
  });
}

/**
 * Records by hand how a failed migration was dealt with, as `prisma migrate resolve` does:
 * `rolledBack` after undoing its partial effects (deploy will then run it again), `applied` after
 * completing it manually (deploy will skip it).
 */
export async function resolve(
  options: MigrateOptions & { applied?: string; rolledBack?: string },
  out: Reporter = consoleReporter,
): Promise<number> {
  const { applied, rolledBack } = options;
  if (Boolean(applied) === Boolean(rolledBack)) {
    out.warn('Give exactly one of --applied <migration> or --rolled-back <migration>.');
    return 2;
  }
  const config = await resolveConfig(options);
  header(config, out);
  return withEngine(config, async ({ engine }) => {
    if (applied) {
      const list = await readMigrationsList(config.migrationsDir, config.shadowDbInitScript);
      await engine.markMigrationApplied({ migrationName: applied, migrationsList: list });
      out.info(`Migration ${applied} marked as applied.`);
    } else if (rolledBack) {
      await engine.markMigrationRolledBack({ migrationName: rolledBack });
      out.info(`Migration ${rolledBack} marked as rolled back.`);
    }
    return 0;
  });
}
