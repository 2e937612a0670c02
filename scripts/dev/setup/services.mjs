// Makes RabbitMQ, PostgreSQL and Redis reachable for local development, in this order of preference:
//   1. already answering at the configured URL (AMQP_URL, DATABASE_URL, REDIS_URL);
//   2. installed on this machine but stopped → start it;
//   3. a Docker engine answers → `docker compose up -d <the missing services>`;
//   4. root on Debian/Ubuntu → apt-get install the Debian packages, then start them;
//   5. otherwise stop with a message naming the variables to set.
// Services are only started or installed when their URL points at this machine.
// Node built-ins only.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, openSync, closeSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { c, log, SetupError } from './log.mjs';
import { amqpProbe, httpGet, isLocalHost, pgProbe, redact, redisProbe, waitFor } from './net.mjs';

/** Local defaults, as in docs/ARCHITECTURE (Configuration). */
export const DEFAULTS = {
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
  DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/community',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
};

export const RABBITMQ_PLUGINS = [
  'rabbitmq_management',
  'rabbitmq_prometheus',
  'rabbitmq_shovel',
  'rabbitmq_shovel_management',
  'rabbitmq_consistent_hash_exchange',
];

const SCHEME_PORTS = { amqp: 5672, amqps: 5671, postgres: 5432, postgresql: 5432, redis: 6379, rediss: 6379, smtp: 1025, smtps: 465 };

/** Parses a service URL from env (or its default); a malformed value fails naming the variable. */
export function target(env, name) {
  const raw = env[name] || DEFAULTS[name];
  let u;
  try {
    u = new URL(raw);
  } catch {
    throw new SetupError(`${name} is not a valid URL: ${JSON.stringify(raw)}`);
  }
  const scheme = u.protocol.replace(/:$/, '');
  const port = Number(u.port) || SCHEME_PORTS[scheme];
  if (!port) throw new SetupError(`${name} has no port and an unknown scheme: ${redact(raw)}`);
  return { name, raw, url: u, host: u.hostname, port, local: isLocalHost(u.hostname) };
}

/**
 * The management API base URL with credentials, resolved the way libs/messaging does it:
 * RABBITMQ_MANAGEMENT_URL if set, else http://<AMQP host>:15672; credentials from that URL,
 * else from AMQP_URL, else guest/guest.
 */
export function managementUrl(env) {
  const amqp = target(env, 'AMQP_URL').url;
  let mgmt;
  try {
    mgmt = new URL(env.RABBITMQ_MANAGEMENT_URL || `http://${amqp.hostname}:15672`);
  } catch {
    throw new SetupError(`RABBITMQ_MANAGEMENT_URL is not a valid URL: ${JSON.stringify(env.RABBITMQ_MANAGEMENT_URL)}`);
  }
  const user = mgmt.username || amqp.username || 'guest';
  const pass = mgmt.password || amqp.password || 'guest';
  return `${mgmt.protocol}//${user}:${pass}@${mgmt.host}`;
}

// ---------------------------------------------------------------------------------------------
// helpers

const EXTRA_BIN_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** Absolute path of an executable on PATH (plus the sbin directories), or null. */
export function findBin(name) {
  const dirs = [...(process.env.PATH || '').split(path.delimiter), ...EXTRA_BIN_DIRS];
  for (const dir of dirs) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* next */
    }
  }
  return null;
}

/** Runs a short command, capturing its output. */
function run(cmd, args, { timeoutMs = 120_000, inherit = false, env = process.env } = {}) {
  const res = spawnSync(cmd, args, {
    encoding: 'utf8',
    stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
    env,
  });
  const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim();
  return { ok: !res.error && res.status === 0, status: res.status, out, error: res.error };
}

/**
 * Starts a daemonising command (rabbitmq-server -detached, redis-server --daemonize, pg_ctlcluster)
 * with its output in a log file, so a forked daemon never holds our pipes. Resolves once the command
 * itself exits (or after 60 s), with the log file path.
 */
function startDaemon(label, cmd, args) {
  const logFile = path.join(os.tmpdir(), `community-dev-${label}-start.log`);
  const fd = openSync(logFile, 'w');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true, env: process.env });
    closeSync(fd);
    const timer = setTimeout(() => resolve({ logFile, status: null }), 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      writeFileSync(logFile, `could not run ${cmd}: ${err.message}\n`, { flag: 'a' });
      resolve({ logFile, status: -1 });
    });
    child.once('exit', (status) => {
      clearTimeout(timer);
      resolve({ logFile, status });
    });
    child.unref();
  });
}

const tail = (file, lines = 15) => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
};

// ---------------------------------------------------------------------------------------------
// the three services

function postgresVersions() {
  try {
    return readdirSync('/etc/postgresql')
      .filter((v) => existsSync(`/etc/postgresql/${v}/main/postgresql.conf`))
      .sort((a, b) => Number(b) - Number(a));
  } catch {
    return [];
  }
}

const SERVICES = [
  {
    key: 'rabbitmq',
    label: 'RabbitMQ',
    envVar: 'AMQP_URL',
    compose: 'rabbitmq',
    apt: ['rabbitmq-server'],
    probe: (t) => amqpProbe(t.host, t.port),
    startable: () => Boolean(findBin('rabbitmq-server')),
    // The broker keeps one file descriptor per connection; the default 1,024 is easy to exhaust
    // (docs/OPERATIONS-LOCAL.md), so raise the limit for the node we start.
    start: () =>
      startDaemon('rabbitmq', 'sh', [
        '-c',
        'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -H -n)" 2>/dev/null; exec "$0" -detached',
        findBin('rabbitmq-server'),
      ]),
    startCommand: () => 'rabbitmq-server -detached',
  },
  {
    key: 'postgres',
    label: 'PostgreSQL',
    envVar: 'DATABASE_URL',
    compose: 'postgres',
    apt: ['postgresql'],
    probe: async (t) => (await pgProbe(t.host, t.port, decodeURIComponent(t.url.username || 'postgres'))) === 'ready',
    startable: () => Boolean(findBin('pg_ctlcluster')) && postgresVersions().length > 0,
    start: () => startDaemon('postgres', findBin('pg_ctlcluster'), ['--skip-systemctl-redirect', postgresVersions()[0], 'main', 'start']),
    startCommand: () => `pg_ctlcluster --skip-systemctl-redirect ${postgresVersions()[0] ?? '<version>'} main start`,
  },
  {
    key: 'redis',
    label: 'Redis',
    envVar: 'REDIS_URL',
    compose: 'redis',
    apt: ['redis-server'],
    probe: (t) => redisProbe(t.host, t.port),
    startable: () => Boolean(findBin('redis-server')),
    start: (t) =>
      startDaemon('redis', findBin('redis-server'), [
        '--daemonize', 'yes', '--bind', '127.0.0.1', '--port', String(t.port), '--save', '', '--appendonly', 'no',
      ]),
    startCommand: (t) => `redis-server --daemonize yes --bind 127.0.0.1 --port ${t.port} --save "" --appendonly no`,
  },
];

async function waitUp(svc, t, timeoutMs, hint = '') {
  await waitFor(() => svc.probe(t), {
    timeoutMs,
    intervalMs: 500,
    onTimeout: () => {
      const more = typeof hint === 'function' ? hint() : hint;
      return `${svc.label} did not answer at ${redact(t.raw)} within ${Math.round(timeoutMs / 1000)} s.${more ? ` ${more}` : ''}`;
    },
  });
}

// ---------------------------------------------------------------------------------------------
// fallbacks

function dockerCompose(root) {
  if (!findBin('docker')) return null;
  if (!run('docker', ['info'], { timeoutMs: 15_000 }).ok) return null;
  if (run('docker', ['compose', 'version'], { timeoutMs: 15_000 }).ok) return ['docker', 'compose'];
  if (findBin('docker-compose') && run('docker-compose', ['version'], { timeoutMs: 15_000 }).ok) return ['docker-compose'];
  log.warn('a Docker engine answers but neither `docker compose` nor `docker-compose` is installed');
  return null;
}

const canApt = () =>
  process.platform === 'linux' && typeof process.getuid === 'function' && process.getuid() === 0 &&
  existsSync('/etc/debian_version') && Boolean(findBin('apt-get'));

/**
 * A freshly installed Debian cluster asks for a password on TCP; the local default DATABASE_URL has
 * none. Trust loopback TCP connections — only on a cluster this script just installed.
 */
function trustLoopback(version) {
  const hba = `/etc/postgresql/${version}/main/pg_hba.conf`;
  const current = readFileSync(hba, 'utf8');
  if (current.includes('# added by scripts/dev')) return;
  writeFileSync(
    hba,
    '# added by scripts/dev (npm start / npm test) for local development: trust loopback TCP\n' +
      'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' +
      current,
  );
  log.info(`PostgreSQL ${version}: loopback TCP connections trusted (${hba})`);
}

// ---------------------------------------------------------------------------------------------

/** Makes RabbitMQ, PostgreSQL and Redis reachable (see the header). */
export async function ensureServices(root, env = process.env) {
  log.step('checking services');
  const missing = [];
  const unreachableRemote = [];

  // 1. already running?
  await Promise.all(
    SERVICES.map(async (svc) => {
      const t = target(env, svc.envVar);
      if (await svc.probe(t)) {
        log.ok(`${svc.label} answers at ${redact(t.raw)}`);
      } else if (!t.local) {
        unreachableRemote.push({ svc, t });
      } else {
        missing.push({ svc, t });
      }
    }),
  );
  if (unreachableRemote.length) {
    throw new SetupError(
      unreachableRemote
        .map(({ svc, t }) => `${svc.label} does not answer at ${svc.envVar}=${redact(t.raw)}; it is not on this machine, so it is not started here.`)
        .join('\n') + '\nCheck the address (and that the server is up), or unset the variable to use a local one.',
    );
  }
  if (!missing.length) return;

  // 2. installed here but stopped → start.
  const left = [];
  for (const m of missing) {
    if (!m.svc.startable()) {
      left.push(m);
      continue;
    }
    log.step(`${m.svc.label} is not running; starting it: ${c.dim(m.svc.startCommand(m.t))}`);
    m.start = await m.svc.start(m.t);
  }
  for (const m of missing.filter((x) => x.start)) {
    const hint = () => `Start output (${m.start.logFile}):\n${tail(m.start.logFile)}`;
    // A start command that failed outright gets a short grace period only (it may just mean "already running").
    const failed = m.start.status !== 0 && m.start.status !== null;
    await waitUp(m.svc, m.t, failed ? 10_000 : m.svc.key === 'rabbitmq' ? 120_000 : 60_000, hint);
    log.ok(`${m.svc.label} started, answers at ${redact(m.t.raw)}`);
  }
  if (!left.length) return;

  // 3. docker compose.
  const compose = dockerCompose(root);
  if (compose) {
    const names = left.map((m) => m.svc.compose);
    log.step(`starting ${names.join(', ')} with ${compose.join(' ')} up -d`);
    const res = run(compose[0], [...compose.slice(1), '-f', path.join(root, 'docker-compose.yml'), 'up', '-d', ...names], {
      inherit: true,
      timeoutMs: 15 * 60_000,
    });
    if (!res.ok) throw new SetupError(`${compose.join(' ')} up -d ${names.join(' ')} failed; see its output above.`);
    for (const m of left) {
      await waitUp(m.svc, m.t, 300_000, `Look at \`${compose.join(' ')} logs ${m.svc.compose}\`.`);
      log.ok(`${m.svc.label} (container) answers at ${redact(m.t.raw)}`);
    }
    return;
  }

  // 4. apt-get on Debian/Ubuntu as root.
  if (canApt()) {
    const pkgs = left.flatMap((m) => m.svc.apt);
    log.step(`no ${left.map((m) => m.svc.label).join(', ')} here and no Docker engine; installing Debian packages: ${pkgs.join(' ')}`);
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    if (!run('apt-get', ['update'], { inherit: true, timeoutMs: 15 * 60_000, env: aptEnv }).ok) {
      throw new SetupError('apt-get update failed; see its output above.');
    }
    if (!run('apt-get', ['install', '-y', ...pkgs], { inherit: true, timeoutMs: 30 * 60_000, env: aptEnv }).ok) {
      throw new SetupError(`apt-get install -y ${pkgs.join(' ')} failed; see its output above.`);
    }
    for (const m of left) {
      if (!m.svc.startable()) throw new SetupError(`${m.svc.label} was installed but ${m.svc.startCommand(m.t).split(' ')[0]} is still not available.`);
      if (m.svc.key === 'postgres') {
        const version = postgresVersions()[0];
        trustLoopback(version);
        // The package may have started the cluster already; reload picks up pg_hba.conf then.
        run(findBin('pg_ctlcluster'), ['--skip-systemctl-redirect', version, 'main', 'reload']);
      }
      if (await m.svc.probe(m.t)) {
        log.ok(`${m.svc.label} installed and running`);
        continue;
      }
      log.step(`starting ${m.svc.label}: ${c.dim(m.svc.startCommand(m.t))}`);
      const started = await m.svc.start(m.t);
      await waitUp(m.svc, m.t, 120_000, () => `Start output (${started.logFile}):\n${tail(started.logFile)}`);
      log.ok(`${m.svc.label} installed and started, answers at ${redact(m.t.raw)}`);
    }
    return;
  }

  // 5. give up, clearly.
  const lines = left.map(({ svc, t }) => `  - ${svc.label}: nothing answers at ${svc.envVar}=${redact(t.raw)}`);
  throw new SetupError(
    [
      'Some services are not reachable and could not be started here:',
      ...lines,
      'Tried: a local installation (none found), Docker (`docker info` did not answer),',
      'and installing Debian packages (needs root on Debian/Ubuntu).',
      'Start them yourself, or point at running ones by setting these variables:',
      '  AMQP_URL      (default amqp://guest:guest@127.0.0.1:5672; needs the management plugin on :15672)',
      '  DATABASE_URL  (default postgresql://postgres@127.0.0.1:5432/community)',
      '  REDIS_URL     (default redis://127.0.0.1:6379)',
      'See docs/OPERATIONS-LOCAL.md.',
    ].join('\n'),
  );
}

// ---------------------------------------------------------------------------------------------
// RabbitMQ plugins and management API

async function enabledPluginsViaApi(mgmt) {
  const res = await httpGet(`${mgmt}/api/nodes`);
  if (!res || res.status !== 200 || !Array.isArray(res.body)) return null;
  return new Set(res.body.flatMap((n) => n.enabled_plugins ?? []));
}

function enabledPluginsViaCli(cli) {
  const res = run(cli, ['list', '-e', '-m'], { timeoutMs: 60_000 });
  if (!res.ok) return null;
  return new Set(res.out.split('\n').map((l) => l.trim()).filter((l) => /^rabbitmq_/.test(l)));
}

/**
 * Enables the RabbitMQ plugins the project relies on (management, prometheus, shovel,
 * consistent-hash) and waits until the management API answers: tests use it to create vhosts.
 */
export async function ensureRabbitPlugins(env = process.env) {
  const amqp = target(env, 'AMQP_URL');
  const mgmt = managementUrl(env);
  const cli = amqp.local ? findBin('rabbitmq-plugins') : null;

  let enabled = await enabledPluginsViaApi(mgmt);
  if (!enabled && cli) enabled = enabledPluginsViaCli(cli);
  const missing = enabled ? RABBITMQ_PLUGINS.filter((p) => !enabled.has(p)) : RABBITMQ_PLUGINS;

  if (enabled && !missing.length) {
    log.ok('RabbitMQ plugins enabled (management, prometheus, shovel, consistent-hash)');
  } else if (cli) {
    log.step(`enabling RabbitMQ plugins: ${missing.join(' ')}`);
    const res = run(cli, ['enable', ...missing], { timeoutMs: 120_000 });
    if (!res.ok) {
      throw new SetupError(`rabbitmq-plugins enable ${missing.join(' ')} failed (run it as root or the rabbitmq user):\n${res.out}`);
    }
    log.ok('RabbitMQ plugins enabled');
  } else if (enabled) {
    log.warn(
      `RabbitMQ at ${redact(amqp.raw)} lacks plugins ${missing.join(', ')} and is not managed here; ` +
        `enable them on that broker: rabbitmq-plugins enable ${missing.join(' ')}`,
    );
  }

  const overview = await waitFor(() => httpGet(`${mgmt}/api/overview`), {
    timeoutMs: 90_000,
    intervalMs: 1000,
    onTimeout:
      `The RabbitMQ management API did not answer at ${redact(mgmt)}/api/overview within 90 s. ` +
      'Enable it (rabbitmq-plugins enable rabbitmq_management) or set RABBITMQ_MANAGEMENT_URL ' +
      '(http://user:pass@host:15672).',
  });
  if (overview.status === 401) {
    throw new SetupError(
      `The RabbitMQ management API at ${redact(mgmt)} refused the credentials (401). ` +
        'Set RABBITMQ_MANAGEMENT_URL=http://user:pass@host:15672 (guest/guest only works from localhost).',
    );
  }
  if (overview.status !== 200) {
    throw new SetupError(`The RabbitMQ management API at ${redact(mgmt)}/api/overview answered HTTP ${overview.status}.`);
  }
  if (!enabled && !cli) {
    // Could not check before the API was up (e.g. a container still booting): check now.
    const now = await enabledPluginsViaApi(mgmt);
    const still = now ? RABBITMQ_PLUGINS.filter((p) => !now.has(p)) : [];
    if (still.length) log.warn(`RabbitMQ lacks plugins ${still.join(', ')}; enable them: rabbitmq-plugins enable ${still.join(' ')}`);
  }
  const version = overview.body?.rabbitmq_version;
  log.ok(`RabbitMQ management API answers${version ? ` (RabbitMQ ${version})` : ''}: ${redact(mgmt)}`);
  return mgmt;
}
