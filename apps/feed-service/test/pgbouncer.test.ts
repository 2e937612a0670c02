// feed-service behind PgBouncer in transaction mode (docs/DEPLOY.md "Connection budget"): Debian's
// pgbouncer of this test's own (its own port and config in a temp dir, stopped in afterAll) in front
// of the shared Postgres, with fewer server connections than the service's pool has clients, so
// consecutive transactions of one client do run on different server sessions. The service's
// DATABASE_URL carries `pgbouncer=true` (libs/db pool.ts): no startup options, unnamed statements,
// cancels by CancelRequest. No `ignore_startup_parameters` here: a pool that still sent its
// `options` would be refused.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Registry } from 'prom-client';
import { createListenClient, createPgPool, createScheduler, withTransaction } from '@community/db';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createFeedService, type FeedService } from '../src/service';
import { clearPrefix, event, FAST_RETRY_TOPOLOGY, freePort, redisPrefix, testConfig } from './harness';

/** Server connections PgBouncer may open per database and user: below the service's pool of 8. */
const SERVER_POOL_SIZE = 2;

function pgbouncerBin(): string {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin']) {
    const file = path.join(dir, 'pgbouncer');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* next */
    }
  }
  // Never a silent skip: the setup installs it (scripts/dev/setup/tools.mjs).
  throw new Error('pgbouncer is not installed (Debian package pgbouncer; `npm test` installs it): this test needs it');
}

interface Bouncer {
  port: number;
  /** `url` (a database on the shared server) as reached through this PgBouncer, with the pgbouncer=true switch. */
  through(url: string): string;
  admin(sql: string): Promise<Array<Record<string, unknown>>>;
  stop(): Promise<void>;
}

async function startPgbouncer(serverUrl: string): Promise<Bouncer> {
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username);
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pgbouncer-test-'));
  // pgbouncer refuses to run as root; as root the test runs it as nobody, who must read and write here.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chmodSync(dir, 0o777);
  writeFileSync(path.join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${SERVER_POOL_SIZE}`,
      'max_client_conn = 200',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const proc: ChildProcess = spawn(
    pgbouncerBin(),
    [...(asRoot ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')],
    { stdio: 'ignore' },
  );
  const exited = once(proc, 'exit');
  const adminUrl = `postgresql://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer`;
  const bouncer: Bouncer = {
    port,
    through(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      u.searchParams.set('pgbouncer', 'true');
      return u.toString();
    },
    async admin(sql) {
      const c = new pg.Client(adminUrl);
      c.on('error', () => undefined);
      await c.connect();
      try {
        return (await c.query(sql)).rows as Array<Record<string, unknown>>;
      } finally {
        await c.end();
      }
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await eventually(
    'pgbouncer accepts connections',
    async () => (await bouncer.admin('SHOW VERSION').catch(() => [])).length > 0,
    20_000,
    100,
  );
  return bouncer;
}

let bouncer: Bouncer;
let db: TestDatabase;
let vhost: TestVhost;
let service: FeedService;
let direct: pg.Pool;
const prefix = redisPrefix('pgbouncer');

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('fs_pgbouncer'), createTestVhost('fs-pgbouncer')]);
  bouncer = await startPgbouncer(db.url);
  const config = testConfig(db, vhost, prefix, { env: { DATABASE_URL: bouncer.through(db.url) } });
  service = createFeedService(config, {
    logger: testLogger('pgbouncer'),
    registry: new Registry(),
    messaging: true,
    topology: FAST_RETRY_TOPOLOGY,
  });
  await service.start();
  await service.app.ready();
  direct = new pg.Pool({ connectionString: db.url, max: 2 });
}, 90_000);

afterAll(async () => {
  await service?.stop();
  await service?.app.close();
  await direct?.end();
  await bouncer?.stop();
  await clearPrefix(testConfig(db, vhost, prefix).REDIS_URL, prefix).catch(() => undefined);
  await Promise.all([db?.drop(), vhost?.delete()]);
}, 60_000);

const feed = async (userId: string) => {
  const token = service.app.jwt.sign({ sub: userId });
  const res = await service.app.inject({
    method: 'GET',
    url: `/v1/users/${encodeURIComponent(userId)}/feed`,
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: res.statusCode,
    postIds: (res.json() as { items?: Array<{ postId: string }> }).items?.map((i) => i.postId),
  };
};

describe('feed-service through PgBouncer (transaction mode)', () => {
  it("a follow and a post reach the follower's feed, with every database connection going through PgBouncer", async () => {
    const [reader, author] = [`rd-${randomUUID().slice(0, 8)}`, `au-${randomUUID().slice(0, 8)}`];
    const postId = `p-${randomUUID().slice(0, 8)}`;
    const publish = async (e: ReturnType<typeof event>) => {
      if (!service.messaging) throw new Error('the service was built without messaging');
      await service.messaging.publisher.publish(e);
    };
    await publish(event('user.followed', { followerId: reader, followeeId: author }, new Date(Date.now() - 60_000)));
    await eventually(
      'the follow recorded',
      async () =>
        (await direct.query('SELECT 1 FROM feed_follows WHERE follower_id = $1 AND active', [reader])).rowCount === 1,
      20_000,
    );
    await publish(event('post.published', { postId, authorId: author, title: 'through the pooler', excerpt: '' }));
    await eventually(
      'the post in the reader feed',
      async () => (await feed(reader)).postIds?.includes(postId) === true,
      20_000,
    );
    expect(await feed(reader)).toEqual({ status: 200, postIds: [postId] });

    // The service's connections are PgBouncer's clients; Postgres sees at most its server pool.
    const clients = (await bouncer.admin('SHOW CLIENTS')).filter((c) => c.database === db.name);
    expect(clients.length).toBeGreaterThan(0);
    const servers = await direct.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'feed-service'`,
      [db.name],
    );
    expect(servers.rows[0].n).toBeLessThanOrEqual(SERVER_POOL_SIZE);
  });
});

describe('libs/db through PgBouncer', () => {
  it('runs named statements from more clients than server connections (sent unnamed)', async () => {
    const pool = createPgPool(bouncer.through(db.url), { max: 6 });
    try {
      const rounds = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          pool
            .query<{ n: number }>({ name: 'pgbouncer-test-named', text: 'SELECT $1::int AS n', values: [i] })
            .then((r) => r.rows[0].n),
        ),
      );
      expect(rounds).toEqual(Array.from({ length: 24 }, (_, i) => i));
    } finally {
      await pool.end();
    }
  });

  it("cancels a transaction's running statement when its deadline passes (CancelRequest, not pg_cancel_backend of PgBouncer's key)", async () => {
    const pool = createPgPool(bouncer.through(db.url), { max: 2, applicationName: 'pgbouncer-cancel' });
    try {
      const deadline = new AbortController();
      const tx = withTransaction(pool, { signal: deadline.signal }, (c) => c.query('SELECT pg_sleep(300)'));
      const settled = tx.then(
        () => 'committed',
        (err: Error) => err.message,
      );
      await eventually(
        'the statement running on the server',
        async () =>
          (
            await direct.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND query = 'SELECT pg_sleep(300)'`,
              [db.name],
            )
          ).rowCount === 1,
        20_000,
      );
      deadline.abort(new Error('handler deadline'));
      // Without a cancel that reaches the server, the rollback waits out the 300 s sleep.
      expect(await settled).toBe('handler deadline');
      expect(
        (
          await direct.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(300)' AND state = 'active'`,
            [db.name],
          )
        ).rowCount,
      ).toBe(0);
    } finally {
      await pool.end();
    }
  }, 60_000);

  it("refuses the scheduler's session advisory locks on a pool through the pooler", async () => {
    const pool = createPgPool(bouncer.through(db.url), { max: 2 });
    try {
      expect(() => createScheduler({ pool, logger: testLogger('pgbouncer'), jobs: [] })).toThrow(
        'the scheduler needs a pool with direct connections to PostgreSQL',
      );
    } finally {
      await pool.end();
    }
  });

  it('refuses LISTEN through the pooler (it needs a direct connection)', () => {
    expect(() =>
      createListenClient({
        connectionString: bouncer.through(db.url),
        channels: ['x'],
        logger: testLogger('pgbouncer'),
        onNotification: () => undefined,
      }),
    ).toThrow(
      'LISTEN x needs a direct connection to PostgreSQL; a pgbouncer=true URL goes through a transaction pooler',
    );
  });
});
