// Database identity (docs/DEPLOY.md "Database roles"; migration 20261202030000_database_roles): each
// service connects as a login user of its own, a member of the service's NOLOGIN group role. Checked on
// a fresh migrated database, over real connections as those users: every table × every role × every
// statement kind is allowed exactly where the grant table below says, and refused with SQLSTATE 42501
// everywhere else; nobody but a table's owner alters, drops or truncates it.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { parse } from 'yaml';
import { createTestDatabase, testResourceName, type TestDatabase } from '@community/testing';

type Service =
  'notification-service' | 'email-service' | 'feed-service' | 'reconciler' | 'demo-community-api' | 'push-service';
const SERVICES: readonly Service[] = [
  'notification-service',
  'email-service',
  'feed-service',
  'reconciler',
  'demo-community-api',
  'push-service',
];
const groupRole = (s: Service): string => `community_${s.replace(/-/g, '_')}`;

/** Who owns each table; `migrator`: the shared libraries' tables stay with the migrations' owner. */
const OWNERS: Record<string, Service | 'migrator'> = {
  _prisma_migrations: 'migrator',
  processed_events: 'migrator',
  outbox_messages: 'migrator',
  scheduled_job_runs: 'migrator',
  notification_items: 'notification-service',
  notification_counters: 'notification-service',
  notification_preferences: 'notification-service',
  notification_users: 'notification-service',
  notification_retractions: 'notification-service',
  email_users: 'email-service',
  email_deliveries: 'email-service',
  email_digest_windows: 'email-service',
  email_digest_items: 'email-service',
  email_suppressions: 'email-service',
  email_service_instances: 'email-service',
  email_withdrawals: 'email-service',
  feed_follows: 'feed-service',
  feed_authors: 'feed-service',
  feed_posts: 'feed-service',
  feed_user_activity: 'feed-service',
  feed_fanout_jobs: 'feed-service',
  feed_fanout_chunks: 'feed-service',
  feed_post_deletions: 'feed-service',
  dlq_messages: 'reconciler',
  dlq_groups: 'reconciler',
  dlq_operations: 'reconciler',
  dlq_operation_items: 'reconciler',
  counter_repairs: 'reconciler',
  reconciler_cursors: 'reconciler',
  retention_horizons: 'email-service',
  user_erasures: 'reconciler',
  community_users: 'demo-community-api',
  community_posts: 'demo-community-api',
  community_comments: 'demo-community-api',
  community_follows: 'demo-community-api',
  community_reactions: 'demo-community-api',
  community_security_alerts: 'demo-community-api',
  community_request_keys: 'demo-community-api',
  push_subscriptions: 'push-service',
  push_deliveries: 'push-service',
  push_withdrawals: 'push-service',
};

type Grant = 'select' | 'insert' | 'update' | 'delete';
/** Grants on tables a role does not own: what its code does there (the table in docs/DEPLOY.md). */
const GRANTS: Record<Service, Record<string, { ops: Grant[]; updateColumns?: string[] }>> = {
  'notification-service': {
    processed_events: { ops: ['select', 'insert'] },
    outbox_messages: { ops: ['select', 'insert', 'update', 'delete'] },
  },
  'email-service': {
    processed_events: { ops: ['select', 'insert'] },
  },
  'feed-service': {
    processed_events: { ops: ['select', 'insert'] },
  },
  reconciler: {
    scheduled_job_runs: { ops: ['select', 'insert', 'update', 'delete'] },
    retention_horizons: { ops: ['select'] },
    processed_events: { ops: ['select', 'delete'] },
    outbox_messages: { ops: ['select', 'insert', 'update', 'delete'] },
    notification_items: { ops: ['select'] },
    notification_preferences: { ops: ['select'] },
    notification_retractions: { ops: ['select'] },
    notification_counters: { ops: ['select', 'update'], updateColumns: ['unread_count', 'version', 'updated_at'] },
    email_users: { ops: ['select'] },
    email_suppressions: { ops: ['select'] },
    email_service_instances: { ops: ['select'] },
    email_deliveries: { ops: ['select', 'delete'] },
    email_digest_items: { ops: ['select', 'delete'] },
    email_digest_windows: { ops: ['select', 'delete', 'update'], updateColumns: ['status'] },
    feed_fanout_jobs: { ops: ['select', 'delete'] },
    feed_fanout_chunks: { ops: ['select', 'delete'] },
    feed_follows: { ops: ['select'] },
    feed_posts: { ops: ['select', 'delete'] },
  },
  'demo-community-api': {
    // Its purge of expired request keys is a scheduled job (libs/db's scheduler).
    scheduled_job_runs: { ops: ['select', 'insert', 'update', 'delete'] },
    outbox_messages: { ops: ['select', 'insert', 'update', 'delete'] },
  },
  'push-service': {
    // Its erasure handler claims user.erased in the inbox.
    processed_events: { ops: ['select', 'insert'] },
  },
};

let db: TestDatabase;
let admin: pg.Client;
/** One login user per service (a member of its group) and one in no group at all. */
const users = new Map<Service | 'nobody', { name: string; client: pg.Client }>();
let columns: Map<string, string[]>;

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** The connection of `who`'s login user. */
function as(who: Service | 'nobody'): pg.Client {
  const user = users.get(who);
  if (!user) throw new Error(`no login user for ${who}`);
  return user.client;
}

function urlAs(user: string): string {
  const url = new URL(db.url);
  url.username = encodeURIComponent(user);
  url.password = '';
  return url.toString();
}

async function connectAs(user: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: urlAs(user) });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Runs `sql` in a transaction that is always rolled back: '' when it ran, else its SQLSTATE. */
async function attempt(client: pg.Client, sql: string, values: unknown[] = []): Promise<string> {
  await client.query('BEGIN');
  try {
    await client.query(sql, values);
    return '';
  } catch (error) {
    return (error as { code?: string }).code ?? `no SQLSTATE: ${(error as Error).message}`;
  } finally {
    await client.query('ROLLBACK');
  }
}

beforeAll(async () => {
  db = await createTestDatabase('db_roles');
  admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  const { rows } = await admin.query<{ table_name: string; columns: string[] }>(
    `SELECT table_name, array_agg(column_name::text ORDER BY ordinal_position) AS columns
       FROM information_schema.columns WHERE table_schema = 'public' GROUP BY table_name`,
  );
  columns = new Map(rows.map((r) => [r.table_name, r.columns]));
  // Login users as a deployment makes them (docs/DEPLOY.md): roles are cluster-wide, so each name is
  // this run's own and is dropped in afterAll.
  for (const who of [...SERVICES, 'nobody'] as const) {
    const name = testResourceName(`dbrole_${who.replace(/-/g, '_').slice(0, 12)}`, '_');
    await admin.query(`CREATE ROLE ${quote(name)} LOGIN${who === 'nobody' ? '' : ` IN ROLE ${quote(groupRole(who))}`}`);
    users.set(who, { name, client: await connectAs(name) });
  }
}, 60_000);

afterAll(async () => {
  for (const { client } of users.values()) await client.end().catch(() => undefined);
  for (const { name } of users.values()) await admin?.query(`DROP ROLE IF EXISTS ${quote(name)}`);
  await admin?.end();
  await db?.drop();
});

it('every table has exactly the owner the grant table names', async () => {
  const { rows } = await admin.query<{ tablename: string; tableowner: string }>(
    `SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
  );
  // A new table must be given its owner (and its grants) in its migration, and listed here.
  const owners = Object.fromEntries(rows.map((r) => [r.tablename, r.tableowner]));
  const migrator = (await admin.query<{ u: string }>('SELECT current_user AS u')).rows[0].u;
  expect(owners).toEqual(
    Object.fromEntries(Object.entries(OWNERS).map(([t, o]) => [t, o === 'migrator' ? migrator : groupRole(o)])),
  );
});

describe.each([...SERVICES, 'nobody' as const])('as %s', (who) => {
  it('each statement kind is allowed on a table exactly where it owns it or holds the grant, refused (42501) elsewhere', async () => {
    const client = as(who);
    const mismatches: string[] = [];
    for (const [table, owner] of Object.entries(OWNERS)) {
      const own = owner === who;
      const grant = who === 'nobody' ? undefined : GRANTS[who][table];
      const has = (op: Grant) => own || (grant?.ops.includes(op) ?? false);
      const cols = columns.get(table) ?? [];
      const updatable = own ? cols : grant?.ops.includes('update') ? (grant.updateColumns ?? cols) : [];
      const notUpdatable = cols.find((c) => !updatable.includes(c));
      const t = quote(table);
      // Zero-row statements: the privileges are checked all the same, and nothing is changed.
      const cases: Array<[string, string, boolean]> = [
        ['SELECT', `SELECT 1 FROM ${t} LIMIT 0`, has('select')],
        ['INSERT', `INSERT INTO ${t} (${quote(cols[0])}) SELECT NULL WHERE false`, has('insert')],
        ['DELETE', `DELETE FROM ${t} WHERE false`, has('delete')],
        ['SELECT … FOR UPDATE', `SELECT 1 FROM ${t} WHERE false FOR UPDATE`, has('select') && updatable.length > 0],
        ['ALTER TABLE', `ALTER TABLE ${t} ADD COLUMN roles_test_probe int`, own],
        ['TRUNCATE', `TRUNCATE ${t} CASCADE`, own],
      ];
      if (updatable[0])
        cases.push([`UPDATE ${updatable[0]}`, `UPDATE ${t} SET ${quote(updatable[0])} = NULL WHERE false`, true]);
      if (notUpdatable)
        cases.push([`UPDATE ${notUpdatable}`, `UPDATE ${t} SET ${quote(notUpdatable)} = NULL WHERE false`, false]);
      if (!own) cases.push(['DROP TABLE', `DROP TABLE ${t}`, false]);
      for (const [what, sql, allowed] of cases) {
        const code = await attempt(client, sql);
        // An owner's TRUNCATE may still be refused for other reasons than privileges (none today).
        if (allowed ? code !== '' : code !== '42501')
          mismatches.push(`${what} ${table}: expected ${allowed ? 'allowed' : '42501'}, got ${code || 'allowed'}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('cannot create a table', async () => {
    expect(await attempt(as(who), 'CREATE TABLE roles_test_new (id int)')).toBe('42501');
  });
});

it('nobody but the reconciler writes the DLQ audit (dlq_operations, dlq_operation_items) or the dead letters', async () => {
  const audit = `INSERT INTO dlq_operations (action, requested_by, selection, matched) VALUES ('discard', 'roles-test', '{}'::jsonb, 0) RETURNING id`;
  for (const who of [...SERVICES, 'nobody' as const]) {
    const client = as(who);
    const expected = who === 'reconciler' ? '' : '42501';
    expect({ who, insert: await attempt(client, audit) }).toEqual({ who, insert: expected });
    expect({ who, update: await attempt(client, `UPDATE dlq_operations SET requested_by = 'forged'`) }).toEqual({
      who,
      update: expected,
    });
    expect({ who, items: await attempt(client, `DELETE FROM dlq_operation_items`) }).toEqual({ who, items: expected });
    expect({ who, messages: await attempt(client, `UPDATE dlq_messages SET state = 'discarded'`) }).toEqual({
      who,
      messages: expected,
    });
  }
});

describe('the statements whose privileges are subtle, as the code runs them, on real rows', () => {
  it('notification-service claims inbox rows (INSERT … ON CONFLICT DO NOTHING RETURNING needs SELECT), but cannot purge them', async () => {
    const client = as('notification-service');
    const claim = `INSERT INTO processed_events (consumer, event_id) SELECT 'roles-test', id FROM unnest($1::text[]) AS t(id) ORDER BY id
                   ON CONFLICT DO NOTHING RETURNING event_id`;
    const first = await client.query(claim, [['e1', 'e2']]);
    expect(first.rows.map((r) => r.event_id)).toEqual(['e1', 'e2']);
    expect((await client.query(claim, [['e1']])).rowCount).toBe(0);
    expect(await attempt(client, `DELETE FROM processed_events WHERE consumer = 'roles-test'`)).toBe('42501');
    // The reconciler's retention does that.
    expect((await as('reconciler').query(`DELETE FROM processed_events WHERE consumer = 'roles-test'`)).rowCount).toBe(
      2,
    );
  });

  it('email-service records its retention horizon in its own table, and the reconciler, which runs its purge, reads it', async () => {
    const upsert = `INSERT INTO retention_horizons (name, horizon_ms, set_by) VALUES ('email', $1, 'email-service')
                    ON CONFLICT (name) DO UPDATE SET horizon_ms = EXCLUDED.horizon_ms, set_by = EXCLUDED.set_by, updated_at = now()`;
    const email = as('email-service');
    await email.query(upsert, [86_400_000]);
    await email.query(upsert, [172_800_000]);
    const { rows } = await as('reconciler').query(
      `SELECT horizon_ms::int AS ms FROM retention_horizons WHERE name = 'email'`,
    );
    expect(rows).toEqual([{ ms: 172_800_000 }]);
    expect(await attempt(as('reconciler'), `DELETE FROM retention_horizons`)).toBe('42501');
  });

  it('the reconciler purges closed digest windows under a row lock, and repairs a counter, but cannot write the rest of either', async () => {
    await admin.query(
      `INSERT INTO email_digest_windows (user_id, window_start, window_end, status) VALUES ('u1', now() - interval '10 days', now() - interval '9 days', 'flushed')`,
    );
    await admin.query(`INSERT INTO notification_counters (user_id, unread_count) VALUES ('u1', 7)`);
    const reconciler = as('reconciler');
    const purged = await reconciler.query(
      `WITH doomed AS (SELECT w.id FROM email_digest_windows w WHERE w.status IN ('flushed', 'empty') AND w.window_end < now() - interval '2 days'
                        ORDER BY w.window_end LIMIT 10 FOR UPDATE SKIP LOCKED),
            items AS (DELETE FROM email_digest_items WHERE window_id IN (SELECT id FROM doomed) RETURNING 1),
            windows AS (DELETE FROM email_digest_windows WHERE id IN (SELECT id FROM doomed) RETURNING 1)
       SELECT (SELECT count(*) FROM windows)::int AS windows`,
    );
    expect(purged.rows).toEqual([{ windows: 1 }]);
    await reconciler.query('BEGIN');
    await reconciler.query(
      `SELECT unread_count FROM notification_counters WHERE user_id = ANY($1::text[]) ORDER BY user_id FOR UPDATE`,
      [['u1']],
    );
    await reconciler.query(
      `UPDATE notification_counters SET unread_count = 0, version = version + 1, updated_at = now() WHERE user_id = 'u1'`,
    );
    await reconciler.query('COMMIT');
    expect((await admin.query(`SELECT unread_count FROM notification_counters WHERE user_id = 'u1'`)).rows).toEqual([
      { unread_count: 0 },
    ]);
    expect(await attempt(reconciler, `UPDATE notification_items SET read_at = now()`)).toBe('42501');
    expect(await attempt(reconciler, `INSERT INTO email_deliveries (idempotency_key) SELECT 'x' WHERE false`)).toBe(
      '42501',
    );
  });
});

it('the CloudNativePG cluster declares the same group roles, the owner as a member of each, and login users each in one group', async () => {
  const cluster = parse(readFileSync(path.resolve(__dirname, '../../../infra/k8s/platform/postgres.yaml'), 'utf8')) as {
    spec: {
      bootstrap: { initdb: { owner: string } };
      managed: {
        roles: Array<{ name: string; login: boolean; inRoles?: string[]; passwordSecret?: { name: string } }>;
      };
    };
  };
  const roles = cluster.spec.managed.roles;
  const groups = SERVICES.map(groupRole);
  expect(roles.filter((r) => !r.login).map((r) => r.name)).toEqual(groups);
  const { rows } = await admin.query<{ rolname: string; rolcanlogin: boolean }>(
    'SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1::text[]) ORDER BY rolname',
    [groups],
  );
  expect(rows).toEqual([...groups].sort().map((rolname) => ({ rolname, rolcanlogin: false })));
  const owner = roles.find((r) => r.name === cluster.spec.bootstrap.initdb.owner);
  expect(owner?.inRoles).toEqual(groups);
  for (const user of roles.filter((r) => r.login && r !== owner)) {
    expect({
      user: user.name,
      inRoles: user.inRoles?.length,
      group: groups.includes(user.inRoles?.[0] ?? ''),
      secret: Boolean(user.passwordSecret),
    }).toEqual({ user: user.name, inRoles: 1, group: true, secret: true });
  }
});

it('a database owner that is no superuser, only a member of every group (as CloudNativePG sets it up), applies every migration', async () => {
  const owner = testResourceName('dbrole_owner', '_');
  const database = testResourceName('dbrole_owner_db', '_');
  const groups = SERVICES.map((s) => quote(groupRole(s))).join(', ');
  await admin.query(`CREATE ROLE ${quote(owner)} LOGIN NOSUPERUSER NOCREATEROLE IN ROLE ${groups}`);
  try {
    await admin.query(`CREATE DATABASE ${quote(database)} OWNER ${quote(owner)}`);
    const url = new URL(db.url);
    url.username = owner;
    url.pathname = `/${database}`;
    const root = path.resolve(__dirname, '../../..');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-r', '@swc-node/register', 'scripts/db/migrate.ts', 'deploy'],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: url.toString() },
      },
    );
    expect(stdout).toContain('All migrations have been successfully applied.');
    const check = new pg.Client({ connectionString: url.toString() });
    await check.connect();
    try {
      const { rows } = await check.query<{ tablename: string; tableowner: string }>(
        `SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'`,
      );
      expect(Object.fromEntries(rows.map((r) => [r.tablename, r.tableowner]))).toEqual(
        Object.fromEntries(Object.entries(OWNERS).map(([t, o]) => [t, o === 'migrator' ? owner : groupRole(o)])),
      );
      // The groups held CREATE on the schema only during the migration.
      const { rows: acl } = await check.query(`SELECT has_schema_privilege($1, 'public', 'CREATE') AS create`, [
        groupRole('reconciler'),
      ]);
      expect(acl).toEqual([{ create: false }]);
    } finally {
      await check.end();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${quote(database)} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${quote(owner)}`);
  }
}, 120_000);
