// One owner per table (docs/DATABASE.md "Who owns each table"): only the owner's code names a table in
// its SQL. The owner of an app's table is read from the migrations (`ALTER TABLE … OWNER TO
// community_<app>`); the three tables that libs own are listed here. DEBT is what still breaks the rule:
// empty since the reconciler's cross-service queries moved to the owners (it runs their exported
// jobs, docs/DEPLOY.md "Cross-service grants"). A new cross-owner query fails this spec; an entry
// added for one must say why, and fails the spec too once it is no longer true.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

const LIB_TABLES: Record<string, string> = {
  processed_events: 'libs/idempotency',
  outbox_messages: 'libs/outbox',
  scheduled_job_runs: 'libs/db',
};

/** file (from the repository root) → the tables of other owners it still names. */
const DEBT: Record<string, string[]> = {};

function ownersFromMigrations(): Map<string, string> {
  const owners = new Map<string, string>(Object.entries(LIB_TABLES));
  const dir = path.join(ROOT, 'prisma/migrations');
  for (const m of readdirSync(dir)) {
    let sql: string;
    try {
      sql = readFileSync(path.join(dir, m, 'migration.sql'), 'utf8');
    } catch {
      continue;
    }
    for (const [, table, role] of sql.matchAll(/ALTER TABLE "?([a-z_]+)"? OWNER TO community_([a-z_]+)/g)) {
      owners.set(table, `apps/${role.replace(/_/g, '-')}`);
    }
  }
  return owners;
}

function productFiles(): string[] {
  const files: string[] = [];
  for (const top of ['apps', 'libs']) {
    for (const pkg of readdirSync(path.join(ROOT, top))) {
      if (top === 'libs' && pkg === 'testing') continue; // test support, not product code
      const src = path.join(ROOT, top, pkg, 'src');
      let entries: string[];
      try {
        entries = readdirSync(src, { recursive: true, encoding: 'utf8' });
      } catch {
        continue;
      }
      for (const f of entries) {
        if (!/\.(ts|lua|sql)$/.test(f) || /\.(spec|test)\.ts$/.test(f) || f.includes('generated')) continue;
        files.push(path.join(top, pkg, 'src', f));
      }
    }
  }
  return files;
}

/** Comments go: a comment may name another owner's table to explain a rule; SQL may not. */
const withoutComments = (src: string) =>
  src
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:'"`])\/\/[^\n]*/g, '$1')
    .replace(/--[^\n]*/g, ' ');

function foreignTables(owners: Map<string, string>): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const file of productFiles()) {
    const pkg = file.split(path.sep).slice(0, 2).join('/');
    const src = withoutComments(readFileSync(path.join(ROOT, file), 'utf8'));
    const names = [...owners]
      .filter(([table, owner]) => owner !== pkg && new RegExp(`\\b${table}\\b`).test(src))
      .map(([table]) => table)
      .sort();
    if (names.length) found[file.split(path.sep).join('/')] = names;
  }
  return found;
}

describe('table ownership', () => {
  const owners = ownersFromMigrations();

  it('every table has an owner', () => {
    // A migration that adds a table without `OWNER TO community_<app>` leaves it with no owner.
    expect(owners.get('notification_items')).toBe('apps/notification-service');
    expect(owners.get('email_deliveries')).toBe('apps/email-service');
    expect(owners.get('dlq_messages')).toBe('apps/reconciler');
    expect(owners.size).toBeGreaterThanOrEqual(33);
  });

  it("no product file names another owner's table, beyond the listed debt", () => {
    const found = foreignTables(owners);
    const unlisted = Object.entries(found).flatMap(([file, tables]) =>
      tables.filter((t) => !(DEBT[file] ?? []).includes(t)).map((t) => `${file} names ${t} (owner ${owners.get(t)})`),
    );
    expect(unlisted).toEqual([]);
  });

  it('the debt list holds nothing that is no longer true', () => {
    const found = foreignTables(owners);
    const stale = Object.entries(DEBT).flatMap(([file, tables]) =>
      tables.filter((t) => !(found[file] ?? []).includes(t)).map((t) => `${file} no longer names ${t}`),
    );
    expect(stale).toEqual([]);
  });
});
