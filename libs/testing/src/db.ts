// A private PostgreSQL database per test file, with every migration applied.
//
// Applying migrations takes seconds (the schema engine starts, and more migrations come), so it happens once:
// into a template database named after a hash of the migrations folder (`community_tpl_<hash8>`). Each test
// database is then a copy, `CREATE DATABASE x TEMPLATE community_tpl_<hash8>`, which takes tens of
// milliseconds. A changed or added migration changes the hash, so the next run builds a fresh template;
// templates outlive the test run on purpose (docs/DATABASE.md shows how to clean them up).
//
// jest runs files in parallel workers: a Postgres advisory lock makes exactly one of them build a missing
// template while the others wait, and the template is built under a temporary name and renamed when complete,
// so a crashed build never leaves a half-migrated template behind.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LOCAL_DEFAULTS } from '@community/config';
import { ownedSuffix } from './names';

const REPO_ROOT = path.resolve(__dirname, '../../..');
const MIGRATE_SCRIPT = path.join(REPO_ROOT, 'scripts/db/migrate.ts');

export type TestDatabase = {
  /** Connection URL of the new database (same server and user as DATABASE_URL). */
  url: string;
  /** Its name, e.g. `test_notifications_41234_1a2b3c4d` (prefix, owner pid, random). */
  name: string;
  /** Drops it, disconnecting whatever is still connected. Idempotent. */
  drop(): Promise<void>;
};

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Runs `fn` with a short-lived connection to the server's `postgres` maintenance database. */
async function withAdmin<T>(baseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(baseUrl, 'postgres') });
  // A connection that dies emits 'error' besides failing the query in flight; the failed query is
  // what reports it, and an unhandled 'error' would take the whole jest worker down.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `Test database setup cannot reach PostgreSQL at ${redact(withDatabase(baseUrl, 'postgres'))} (server taken from DATABASE_URL): ${(error as Error).message}`,
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function migrationsDir(): string {
  return path.resolve(REPO_ROOT, process.env.DB_MIGRATIONS_DIR ?? 'prisma/migrations');
}

/** First 8 hex digits of a SHA-256 over every migration's folder name and SQL, in apply order. */
async function hashMigrations(dir: string): Promise<string> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort((a, b) => a.localeCompare(b));
  const hash = createHash('sha256');
  for (const name of names) {
    const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8').catch(() => '');
    hash.update(`${name}\0${sql}\0`);
  }
  return hash.digest('hex').slice(0, 8);
}

/** Applies the migrations with the project's own runner (scripts/db/migrate.ts), as `npm run db:migrate` does. */
async function migrate(databaseUrl: string): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, ['-r', '@swc-node/register', MIGRATE_SCRIPT, 'deploy'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, DB_MIGRATIONS_DIR: migrationsDir() },
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`Applying migrations to the test template failed:\n${e.stderr || e.stdout || e.message}`);
  }
}

async function databaseExists(client: pg.Client, name: string): Promise<boolean> {
  const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return (rowCount ?? 0) > 0;
}

async function buildTemplate(baseUrl: string, template: string): Promise<void> {
  await withAdmin(baseUrl, async (admin) => {
    if (await databaseExists(admin, template)) return; // fast path: built by an earlier run
    // Session-level lock keyed on the template name: one builder per template, across processes.
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [template]);
    try {
      if (await databaseExists(admin, template)) return; // another worker built it while we waited
      const building = `${template}_build`;
      // Leftover of a crashed build? It may already be marked as a template, which DROP refuses.
      if (await databaseExists(admin, building)) {
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} WITH IS_TEMPLATE false`);
        await admin.query(`DROP DATABASE ${quoteIdent(building)} WITH (FORCE)`);
      }
      await admin.query(`CREATE DATABASE ${quoteIdent(building)}`);
      try {
        await migrate(withDatabase(baseUrl, building));
        // Nobody may connect to the template: a connection would make `CREATE DATABASE ... TEMPLATE` fail.
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
        // Only a complete template ever carries the final name.
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} RENAME TO ${quoteIdent(template)}`);
      } catch (error) {
        await admin.query(`ALTER DATABASE ${quoteIdent(building)} WITH IS_TEMPLATE false`).catch(() => undefined);
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(building)} WITH (FORCE)`).catch(() => undefined);
        throw error;
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [template]);
    }
  });
}

// One template lookup per process and migrations hash, however many test databases the file creates.
const templates = new Map<string, Promise<void>>();

function ensureTemplate(baseUrl: string, template: string): Promise<void> {
  const key = `${withDatabase(baseUrl, template)}`;
  let pending = templates.get(key);
  if (!pending) {
    pending = buildTemplate(baseUrl, template);
    pending.catch(() => templates.delete(key)); // let a later call retry after a failure
    templates.set(key, pending);
  }
  return pending;
}

function uniqueName(prefix: string): string {
  const clean =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '') || 'db';
  // `test_<prefix>_<pid>_<8 hex>` as testResourceName makes it (the owner pid lets npm test's setup
  // delete leaked ones); PostgreSQL truncates identifiers at 63 bytes, so the prefix is cut, never the suffix.
  const suffix = ownedSuffix('_');
  return `test_${clean.slice(0, 63 - 'test_'.length - suffix.length - 1)}_${suffix}`;
}

/**
 * Creates a fresh database with all migrations applied, on the server of DATABASE_URL (default
 * postgres@127.0.0.1:5432). Use one per test file and `drop()` it in afterAll.
 */
export async function createTestDatabase(prefix: string): Promise<TestDatabase> {
  const baseUrl = process.env.DATABASE_URL || LOCAL_DEFAULTS.DATABASE_URL;
  const template = `community_tpl_${await hashMigrations(migrationsDir())}`;
  await ensureTemplate(baseUrl, template);

  const name = uniqueName(prefix);
  await withAdmin(baseUrl, async (admin) => {
    // Copies are cheap; retry briefly in case something still holds the template open (55006 object_in_use).
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== '55006' || attempt >= 20) throw error;
        await sleep(50 * attempt);
      }
    }
  });

  let dropped: Promise<void> | undefined;
  return {
    url: withDatabase(baseUrl, name),
    name,
    drop() {
      dropped ??= withAdmin(baseUrl, async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}
