// Makes RabbitMQ, PostgreSQL and Redis reachable for local development, in this order of preference:
//   1. already answering at the configured URL (AMQP_URL, DATABASE_URL, REDIS_URL);
//   2. installed on this machine but stopped → start it;
//   3. a Docker engine answers → `docker compose up -d <the missing services>`;
//   4. root on Debian/Ubuntu → apt-get install the Debian packages, then start them;
//   5. otherwise stop with a message naming the variables to set.
// Services are only started or installed when their URL points at this machine.
// Node built-ins only, plus the project's rules (./project-rules.mjs), loaded once dependencies are installed.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { c, log, SetupError } from './log.mjs';
import { amqpProbe, pgProbe, redact, redisProbe, waitFor } from './net.mjs';
import { findBin, run, startDaemon, tail } from './system.mjs';
import { projectRules } from './project-rules.mjs';
import { target } from './targets.mjs';

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
    start: () =>
      startDaemon('postgres', findBin('pg_ctlcluster'), [
        '--skip-systemctl-redirect',
        postgresVersions()[0],
        'main',
        'start',
      ]),
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
        '--daemonize',
        'yes',
        '--bind',
        '127.0.0.1',
        '--port',
        String(t.port),
        '--save',
        '',
        '--appendonly',
        'no',
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
  if (findBin('docker-compose') && run('docker-compose', ['version'], { timeoutMs: 15_000 }).ok)
    return ['docker-compose'];
  log.warn('a Docker engine answers but neither `docker compose` nor `docker-compose` is installed');
  return null;
}

const canApt = () =>
  process.platform === 'linux' &&
  typeof process.getuid === 'function' &&
  process.getuid() === 0 &&
  existsSync('/etc/debian_version') &&
  Boolean(findBin('apt-get'));

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
        .map(
          ({ svc, t }) =>
            `${svc.label} does not answer at ${svc.envVar}=${redact(t.raw)}; it is not on this machine, so it is not started here.`,
        )
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
    const res = run(
      compose[0],
      [...compose.slice(1), '-f', path.join(root, 'docker-compose.yml'), 'up', '-d', ...names],
      {
        inherit: true,
        timeoutMs: 15 * 60_000,
      },
    );
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
    log.step(
      `no ${left.map((m) => m.svc.label).join(', ')} here and no Docker engine; installing Debian packages: ${pkgs.join(' ')}`,
    );
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    if (!run('apt-get', ['update'], { inherit: true, timeoutMs: 15 * 60_000, env: aptEnv }).ok) {
      throw new SetupError('apt-get update failed; see its output above.');
    }
    if (!run('apt-get', ['install', '-y', ...pkgs], { inherit: true, timeoutMs: 30 * 60_000, env: aptEnv }).ok) {
      throw new SetupError(`apt-get install -y ${pkgs.join(' ')} failed; see its output above.`);
    }
    for (const m of left) {
      if (!m.svc.startable())
        throw new SetupError(
          `${m.svc.label} was installed but ${m.svc.startCommand(m.t).split(' ')[0]} is still not available.`,
        );
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
  const { localDefaults } = projectRules();
  const lines = left.map(({ svc, t }) => `  - ${svc.label}: nothing answers at ${svc.envVar}=${redact(t.raw)}`);
  throw new SetupError(
    [
      'Some services are not reachable and could not be started here:',
      ...lines,
      'Tried: a local installation (none found), Docker (`docker info` did not answer),',
      'and installing Debian packages (needs root on Debian/Ubuntu).',
      'Start them yourself, or point at running ones by setting these variables:',
      `  AMQP_URL      (default ${localDefaults.AMQP_URL}; needs the management plugin on :15672)`,
      `  DATABASE_URL  (default ${localDefaults.DATABASE_URL})`,
      `  REDIS_URL     (default ${localDefaults.REDIS_URL})`,
      'See docs/OPERATIONS-LOCAL.md.',
    ].join('\n'),
  );
}
