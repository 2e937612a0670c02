// End-to-end tests of the offline migration runner (scripts/db/migrate.ts), run as the CLI it is, against
// scratch databases that are dropped afterwards. The migrations folder and schema are copied to temp dirs
// whenever a test needs to tamper with them.
import { execFile } from 'node:child_process';
import { appendFile, cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { eventually, testResourceName } from '@community/testing';

// Every step spawns the CLI (node + swc + wasm engine start, ~1-2 s; more on a busy machine).
jest.setTimeout(120_000);

const ROOT = path.resolve(__dirname, '../../..');
const MIGRATIONS = path.join(ROOT, 'prisma/migrations');
const SERVER = new URL(process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/community');

function dbUrl(name: string): string {
  const url = new URL(SERVER.toString());
  url.pathname = `/${name}`;
  return url.toString();
}

type Run = { code: number; stdout: string; stderr: string; output: string };

function cli(databaseUrl: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', 'scripts/db/migrate.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, DB_MIGRATIONS_DIR: '' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const created: string[] = [];
const tempDirs: string[] = [];

function scratchName(tag: string): string {
  const name = testResourceName(`migrate_${tag}`, '_');
  created.push(name);
  return name;
}

async function copyMigrations(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'migrations-'));
  tempDirs.push(dir);
  await cp(MIGRATIONS, dir, { recursive: true });
  return dir;
}

async function migrationNames(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

afterAll(async () => {
  for (const name of created) {
    await query(dbUrl('postgres'), `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('scripts/db/migrate.ts', () => {
  const name = scratchName('main');
  const url = dbUrl(name);

  it('deploy creates the missing database and applies every migration', async () => {
    const run = await cli(url, ['deploy']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Created database "${name}"`);
    expect(run.stdout).toContain('All migrations have been successfully applied.');

    const expected = await migrationNames(MIGRATIONS);
    const rows = await query<{ migration_name: string; finished_at: Date | null; checksum: string }>(
      url,
      'SELECT migration_name, finished_at, checksum FROM _prisma_migrations ORDER BY migration_name',
    );
    expect(rows.map((r) => r.migration_name)).toEqual(expected);
    expect(rows.every((r) => r.finished_at !== null && /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
    expect(expected.some((n) => n.endsWith('_init'))).toBe(true);

    const [table] = await query<{ t: string | null }>(url, "SELECT to_regclass('public.processed_events')::text AS t");
    expect(table.t).toBe('processed_events');
  });

  it('deploy again reports the database already in sync', async () => {
    const run = await cli(url, ['deploy']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('No pending migrations to apply');
  });

  it('status exits 0 when in sync', async () => {
    const run = await cli(url, ['status']);
    expect(run.stdout).toContain('Database schema is up to date!');
    expect(run.stdout).toContain('Drift: none');
    expect(run.code).toBe(0);
  });

  it('status reports a migration edited after it was applied (checksum)', async () => {
    const dir = await copyMigrations();
    const [first] = await migrationNames(dir);
    await appendFile(path.join(dir, first, 'migration.sql'), '\n-- edited after being applied\n');
    const run = await cli(url, ['status', '--migrations-dir', dir, '--skip-drift']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Checksum mismatch');
    expect(run.stderr).toContain(first);
  });

  it('status reports a pending migration', async () => {
    const dir = await copyMigrations();
    await mkdir(path.join(dir, '29991231000000_later'));
    await writeFile(path.join(dir, '29991231000000_later', 'migration.sql'), 'CREATE TABLE later_table (id int);\n');
    const run = await cli(url, ['status', '--migrations-dir', dir, '--skip-drift']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Pending');
    expect(run.stderr).toContain('29991231000000_later');
  });

  it('status reports drift from a change made outside migrations', async () => {
    const shadowsNow = async () =>
      (
        (await query(
          dbUrl('postgres'),
          "SELECT datname FROM pg_database WHERE datname LIKE 'prisma_migrate_shadow_db_%'",
        )) as Array<{ datname: string }>
      ).map((r) => r.datname);
    const before = new Set(await shadowsNow());
    await query(url, 'ALTER TABLE processed_events ADD COLUMN sneaky integer');
    try {
      const run = await cli(url, ['status']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('Drift detected');
      expect(run.stderr).toContain('sneaky');
    } finally {
      await query(url, 'ALTER TABLE processed_events DROP COLUMN sneaky');
    }
    // No shadow database is left behind by the drift check. Other processes (parallel test files,
    // a developer's db:status) may have one of their own for a moment, so wait for those to go.
    await eventually(
      'no new shadow database left',
      async () => (await shadowsNow()).every((name) => before.has(name)),
      20_000,
    );
  });

  it('status fails clearly when the database does not exist', async () => {
    const run = await cli(dbUrl(scratchName('absent')), ['status']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('does not exist');
  });

  it('names DATABASE_URL when the server cannot be reached', async () => {
    const run = await cli('postgresql://postgres@127.0.0.1:1/nowhere', ['deploy']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('DATABASE_URL=postgresql://postgres@127.0.0.1:1/nowhere');
  });
});

describe('scripts/db/migrate.ts failed migration', () => {
  it('stops at a failed migration until it is resolved, and runs scripts whole', async () => {
    const url = dbUrl(scratchName('failed'));
    const dir = await copyMigrations();
    const script = path.join(dir, '29991231000000_second', 'migration.sql');
    await mkdir(path.dirname(script));
    await writeFile(script, 'CREATE TABLE second_table (id int);\nSELECT no_such_function();\n');

    const failed = await cli(url, ['deploy', '--migrations-dir', dir]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('no_such_function');
    expect(failed.stderr).not.toContain('sql_schema_connector::'); // engine span trace trimmed

    const blocked = await cli(url, ['deploy', '--migrations-dir', dir]);
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toContain('P3009');

    // Fixed by hand: `;` inside a comment, a string and a DO block must survive (adapter-pg would split there).
    await writeFile(
      script,
      "-- second; fixed\nCREATE TABLE second_table (id int);\nCOMMENT ON TABLE second_table IS 'a; b';\n" +
        'DO $$ BEGIN PERFORM 1; PERFORM 2; END $$;\n',
    );
    const resolved = await cli(url, ['resolve', '--rolled-back', '29991231000000_second', '--migrations-dir', dir]);
    expect(resolved.code).toBe(0);
    const deploy = await cli(url, ['deploy', '--migrations-dir', dir]);
    expect(deploy.code).toBe(0);
    expect(deploy.stdout).toContain('29991231000000_second');
    const [comment] = await query<{ c: string }>(url, "SELECT obj_description('second_table'::regclass) AS c");
    expect(comment.c).toBe('a; b');
  });
});

describe('scripts/db/migrate.ts create', () => {
  it('generates a migration from schema changes that deploy then applies', async () => {
    const url = dbUrl(scratchName('create'));
    const dir = await copyMigrations();
    const schemaDir = await mkdtemp(path.join(os.tmpdir(), 'schema-'));
    tempDirs.push(schemaDir);
    // the project's schema folder plus one new model file
    const schema = path.join(schemaDir, 'schema');
    await cp(path.join(ROOT, 'prisma/schema'), schema, { recursive: true });
    await writeFile(
      path.join(schema, 'widget.prisma'),
      `model Widget {\n  id   String @id\n  name String\n\n  @@map("widgets")\n}\n`,
    );

    const before = await migrationNames(dir);
    const run = await cli(url, ['create', '--name', 'Add widgets', '--migrations-dir', dir, '--schema', schema]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const added = (await migrationNames(dir)).filter((n) => !before.includes(n));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatch(/^\d{14}_add_widgets$/);
    expect(await readFile(path.join(dir, added[0], 'migration.sql'), 'utf8')).toContain('CREATE TABLE "widgets"');
    expect(await readFile(path.join(dir, 'migration_lock.toml'), 'utf8')).toContain('provider = "postgresql"');

    // Written, not applied: deploy applies it.
    const [beforeDeploy] = await query<{ t: string | null }>(url, "SELECT to_regclass('public.widgets')::text AS t");
    expect(beforeDeploy.t).toBeNull();
    const deploy = await cli(url, ['deploy', '--migrations-dir', dir]);
    expect(deploy.code).toBe(0);
    expect(deploy.stdout).toContain(added[0]);
    const [table] = await query<{ t: string | null }>(url, "SELECT to_regclass('public.widgets')::text AS t");
    expect(table.t).toBe('widgets');

    // Nothing left to generate once the folder matches the schema.
    const again = await cli(url, ['create', '--name', 'nothing', '--migrations-dir', dir, '--schema', schema]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No schema change found');
    expect(await migrationNames(dir)).toEqual([...before, added[0]]);
  });

  it('requires a name', async () => {
    const run = await cli(dbUrl('unused'), ['create']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--name');
  });
});
