// Resolves what the migration runner works on from the same prisma.config.ts the Prisma CLI reads
// (loaded with @prisma/config, so both always agree), plus the few overrides tests and operators need.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { loadConfigFromFile } from '@prisma/config';
import type { SchemaFilter } from '@prisma/schema-engine-wasm';
import { parseDatabaseUrl } from './database';

export type MigrateOptions = {
  /** Directory prisma.config.ts is searched in and relative paths are resolved against. Default: cwd. */
  cwd?: string;
  /** Explicit config file instead of discovery. */
  configFile?: string;
  /** Overrides the config's `schema` (file or folder of .prisma files). */
  schema?: string;
  /** Overrides the config's `migrations.path`. Env: DB_MIGRATIONS_DIR. */
  migrationsDir?: string;
  /** Overrides the config's `datasource.url` (which prisma.config.ts takes from DATABASE_URL). */
  databaseUrl?: string;
};

export type ResolvedConfig = {
  configPath: string | null;
  databaseUrl: string;
  shadowDatabaseUrl?: string;
  /** [absolute path, content] per schema file. */
  schemaFiles: Array<[string, string]>;
  migrationsDir: string;
  shadowDbInitScript: string;
  filters: SchemaFilter;
};

async function readSchemaFiles(schemaPath: string): Promise<Array<[string, string]>> {
  const info = await stat(schemaPath).catch(() => null);
  if (!info) throw new Error(`Prisma schema not found at ${schemaPath}`);
  if (info.isFile()) return [[schemaPath, await readFile(schemaPath, 'utf8')]];
  // A folder: every .prisma file below it, as Prisma's multi-file schemas work.
  const entries = await readdir(schemaPath, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile() && e.name.endsWith('.prisma'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
  if (files.length === 0) throw new Error(`No .prisma files in ${schemaPath}`);
  return Promise.all(files.map(async (f) => [f, await readFile(f, 'utf8')] as [string, string]));
}

export async function resolveConfig(options: MigrateOptions = {}): Promise<ResolvedConfig> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const loaded = await loadConfigFromFile({ configRoot: cwd, configFile: options.configFile });
  if (loaded.error) {
    const detail = 'error' in loaded.error ? `: ${loaded.error.error.message}` : '';
    throw new Error(
      `Could not load the Prisma config (${loaded.error._tag}) from ${loaded.resolvedPath ?? cwd}${detail}`,
    );
  }
  const { config } = loaded;
  // Relative paths in the config are relative to the config file, as in the Prisma CLI.
  const base = loaded.resolvedPath ? path.dirname(loaded.resolvedPath) : cwd;

  const schemaPath = options.schema
    ? path.resolve(cwd, options.schema)
    : path.resolve(base, config.schema ?? 'prisma/schema.prisma');
  const schemaFiles = await readSchemaFiles(schemaPath);

  const migrationsDirOverride = options.migrationsDir ?? process.env.DB_MIGRATIONS_DIR;
  const migrationsDir = migrationsDirOverride
    ? path.resolve(cwd, migrationsDirOverride)
    : config.migrations?.path
      ? path.resolve(base, config.migrations.path)
      : path.join((await stat(schemaPath)).isFile() ? path.dirname(schemaPath) : schemaPath, 'migrations');

  const databaseUrl = options.databaseUrl ?? config.datasource?.url;
  if (!databaseUrl) {
    throw new Error(
      `No database URL: set DATABASE_URL (read by ${loaded.resolvedPath ?? 'prisma.config.ts'} as datasource.url)`,
    );
  }
  parseDatabaseUrl(databaseUrl); // fail before any output on a malformed URL

  return {
    configPath: loaded.resolvedPath,
    databaseUrl,
    shadowDatabaseUrl: config.datasource?.shadowDatabaseUrl || undefined,
    schemaFiles,
    migrationsDir,
    shadowDbInitScript: config.migrations?.initShadowDb ?? '',
    filters: { externalTables: config.tables?.external ?? [], externalEnums: config.enums?.external ?? [] },
  };
}
