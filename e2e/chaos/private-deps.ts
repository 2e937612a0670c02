import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../harness';

/**
 * Private dependencies of the fault suite: a RabbitMQ node, a Postgres 15 cluster and a Redis server
 * of its own, started by the suite on free ports under a temporary directory and removed at the end.
 * The faults it injects (broker stop_app, memory alarm, database restart, Redis down) are
 * machine-wide on the shared services; on these instances they hit nobody else, so the suite can
 * run next to other tests (and in CI). Requires the server binaries installed locally (the same
 * ones `npm start` uses: rabbitmq-server, /usr/lib/postgresql/15/bin, redis-server); run as root
 * (the servers run as their own system users, as the packages install them) or as a user that
 * owns the temporary directory.
 */
const run = promisify(execFile);
const PG_BIN = process.env.CHAOS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const RABBIT_BIN = process.env.CHAOS_RABBITMQ_BIN ?? '/usr/lib/rabbitmq/bin';
const IS_ROOT = process.getuid?.() === 0;

/**
 * The working directory of every command run as another user: `/`, which every user can read. The
 * caller's own folder may not be (a `mktemp -d` folder or root's home is mode 0700): rabbitmqctl then
 * prints `File operation error: eacces. Target: .` instead of its output, and pg_ctl cannot find its
 * current directory (docs/TESTING.md, "Runs from any folder").
 */
export const OTHER_USER_CWD = '/';

/** Runs a command as `user` when we are root (the servers refuse to run as root), else as ourselves. */
async function as(
  user: string,
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  timeout = 120_000,
): Promise<string> {
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const [file, argv] = IS_ROOT
    ? ['runuser', ['-u', user, '--', 'env', ...envArgs, cmd, ...args]]
    : ['env', [...envArgs, cmd, ...args]];
  try {
    const { stdout } = await run(file, argv, { timeout, maxBuffer: 16 * 1024 * 1024, cwd: OTHER_USER_CWD });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${e.stderr || e.stdout || e.message}`);
  }
}

async function ownedDir(prefix: string, user: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  if (IS_ROOT) {
    const { stdout } = await run('id', ['-u', user]);
    const { stdout: gid } = await run('id', ['-g', user]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await chmod(dir, 0o755);
  return dir;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

export interface PrivateRabbit {
  node: string;
  /** AMQP URL of the default vhost `/` (guest/guest from localhost). */
  amqpUrl: string;
  amqpPort: number;
  managementUrl: string;
  managementPort: number;
  /** `rabbitmqctl -n <node> ...args`. */
  ctl(...args: string[]): Promise<string>;
  /** Another CLI tool of the package against this node: `rabbitmq-upgrade -n <node> drain`, `rabbitmq-queues ...`. */
  cli(tool: 'rabbitmq-upgrade' | 'rabbitmq-queues' | 'rabbitmq-diagnostics', ...args: string[]): Promise<string>;
  /** SIGKILL of the node's Erlang VM (the pid in its RABBITMQ_PID_FILE), as the OOM killer or a lost machine does it; resolves once it is gone. */
  kill(): Promise<void>;
  /** `rabbitmqctl stop` (the VM ends; data, config and cluster membership stay for `start`). */
  shutdown(): Promise<void>;
  /** Starts the node again on the same ports and data (after `kill` or `shutdown`); resolves once it serves AMQP and the management API. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RabbitNodeOptions {
  /** The node name; default `chaos-<pid>@localhost`. The leftovers sweep (scripts/dev/setup/leftovers.mjs) reads the owner pid in it. */
  node?: string;
  /** Prefix of its temporary directory (default `chaos-rabbit-`). */
  dirPrefix?: string;
  /** More rabbitmq.conf lines. */
  conf?: string[];
}

/** The beam of a node whose pid file says `pid` is still running. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function startPrivateRabbit(options: RabbitNodeOptions = {}): Promise<PrivateRabbit> {
  const user = 'rabbitmq';
  const dir = await ownedDir(options.dirPrefix ?? 'chaos-rabbit-', user);
  const [amqpPort, mgmtPort, distPort] = [await freePort(), await freePort(), await freePort()];
  const node = options.node ?? `chaos-${process.pid}@localhost`;
  await writeFile(path.join(dir, 'enabled_plugins'), '[rabbitmq_management].\n');
  await writeFile(
    path.join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${amqpPort}`,
      `management.tcp.ip = 127.0.0.1`,
      `management.tcp.port = ${mgmtPort}`,
      // Queue stats every second, not 5 s: the drain checks read them.
      `collect_statistics_interval = 1000`,
      ...(options.conf ?? []),
      '',
    ].join('\n'),
  );
  if (IS_ROOT) await run('chown', ['-R', `${user}:${user}`, dir]);
  // HOME holds the Erlang cookie the CLI tools and the node share (the package's, as for the shared node).
  const home = IS_ROOT ? '/var/lib/rabbitmq' : (process.env.HOME ?? dir);
  const pidFile = path.join(dir, 'pid');
  const env = {
    HOME: home,
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_PID_FILE: pidFile,
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: path.join(dir, 'advanced.config'),
  };
  const cli = (tool: string, ...args: string[]) =>
    as(user, path.join(RABBIT_BIN, tool), ['-n', node, ...args], { HOME: home });
  const ctl = (...args: string[]) => cli('rabbitmqctl', ...args);
  const managementUrl = `http://127.0.0.1:${mgmtPort}`;
  const pid = async () => Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  const start = async () => {
    await as(user, path.join(RABBIT_BIN, 'rabbitmq-server'), ['-detached'], env);
    await waitFor(
      `RabbitMQ node ${node}`,
      async () => {
        await ctl('await_startup', '--timeout', '5');
        const res = await fetch(`${managementUrl}/api/overview`, {
          headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
        });
        return res.ok;
      },
      120_000,
    );
  };
  try {
    await start();
  } catch (err) {
    await ctl('stop').catch(() => undefined);
    throw err;
  }
  return {
    node,
    amqpUrl: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
    amqpPort,
    managementUrl,
    managementPort: mgmtPort,
    ctl,
    cli,
    async kill() {
      const p = await pid();
      if (!p || !running(p)) throw new Error(`${node}: no running VM in ${pidFile}`);
      process.kill(p, 'SIGKILL');
      await waitFor(`${node} gone after SIGKILL`, async () => !running(p), 30_000);
    },
    async shutdown() {
      const p = await pid();
      await ctl('stop');
      if (p) await waitFor(`${node} stopped`, async () => !running(p), 60_000);
    },
    start,
    async stop() {
      await ctl('stop').catch(() => undefined);
      // A node killed and never restarted has nobody to answer `stop`: its VM is gone already; one
      // that does not answer is killed, so no beam outlives the suite.
      const p = await pid();
      if (p && running(p)) process.kill(p, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivatePostgres {
  /** Server URL (database `postgres`, user postgres, trust auth). */
  url: string;
  port: number;
  /** `pg_ctl restart -m immediate`: every backend killed, crash recovery, back on the same port. */
  restartImmediate(): Promise<void>;
  stopFast(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const user = 'postgres';
  const dir = await ownedDir('chaos-pg-', user);
  const data = path.join(dir, 'data');
  const port = await freePort();
  const pgCtl = (...args: string[]) =>
    as(user, path.join(PG_BIN, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'server.log'), ...args]);
  await as(user, path.join(PG_BIN, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  // Test-only durability setting: fsync off. The faults kill the server, never the machine, so the
  // page cache keeps what was written and crash recovery after `-m immediate` still finds every
  // acknowledged commit. synchronous_commit stays on: off, a crash loses the last commits already
  // acknowledged (WAL still in shared memory), which the first run of this suite caught as a "lost"
  // security alert the API had answered 201 for.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=300`;
  const start = () => pgCtl('-w', '-t', '60', '-o', options, 'start').then(() => undefined);
  await start();
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    async restartImmediate() {
      await pgCtl('-w', '-t', '60', '-m', 'immediate', '-o', options, 'restart');
    },
    async stopFast() {
      await pgCtl('-w', '-m', 'immediate', 'stop');
    },
    start,
    async stop() {
      await pgCtl('-w', '-m', 'immediate', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Creates database `name` on the private server and applies every migration with the project's runner. */
export async function createMigratedDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const root = path.resolve(__dirname, '../..');
  await run(process.execPath, ['-r', '@swc-node/register', path.join(root, 'scripts/db/migrate.ts'), 'deploy'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: url.toString() },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: { stderr?: string; message: string }) => {
    throw new Error(`migrating the chaos database: ${err.stderr || err.message}`);
  });
  return url.toString();
}

export interface PrivateRedis {
  url: string;
  port: number;
  /** SHUTDOWN NOSAVE: the server is gone, its port refuses connections. */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const user = 'redis';
  const dir = await ownedDir('chaos-redis-', user).catch(() => ownedDir('chaos-redis-', 'root'));
  const port = await freePort();
  const pidfile = path.join(dir, 'redis.pid');
  const owner = IS_ROOT ? (await run('stat', ['-c', '%U', dir])).stdout.trim() : '';
  const up = async () => {
    await as(owner || 'root', 'redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'yes',
      '--dir',
      dir,
      '--pidfile',
      pidfile,
      '--logfile',
      path.join(dir, 'redis.log'),
    ]);
    await waitFor(
      'redis',
      async () => (await run('redis-cli', ['-p', String(port), 'ping'])).stdout.trim() === 'PONG',
      15_000,
    );
  };
  const down = async () => {
    await run('redis-cli', ['-p', String(port), 'shutdown', 'nosave']).catch(() => undefined);
    await waitFor(
      'redis down',
      async () => {
        await run('redis-cli', ['-p', String(port), 'ping']).then(
          () => {
            throw new Error('still up');
          },
          () => undefined,
        );
        return true;
      },
      15_000,
    );
  };
  await up();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    down,
    up,
    async stop() {
      await down().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
