// `npm test` only: deletes what killed test runs leaked on the shared servers, and checks the broker's
// open-file limit. A test file creates its own vhost, database and Redis key prefix and removes them in
// `afterAll`; a run killed with SIGKILL, a CI timeout or Ctrl-C twice never gets there. Each leaked vhost
// holds about 64 quorum queues, each with open files on the node, so leftovers add up until the node
// stalls (docs/TESTING.md, "Leftovers").
//
// Which names are leftovers: every test resource name carries the pid of the process that created it
// (`test-<prefix>-<pid>-<8 hex>`, libs/testing/src/names.ts). A name whose process is gone is deleted; a
// name whose process is alive belongs to a run still going on this machine (a second clone, a developer's
// jest) and is kept. A `test*` name without a pid is from before the pid was added, and is deleted.
// Only servers on this machine are cleaned: a pid means nothing on another host.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { log } from './log.mjs';
import { httpGet } from './net.mjs';
import { target } from './targets.mjs';

/** The owner pid at the end of a test resource name (`…-<pid>-<8 hex>`, with `-`, `_` or `:`), or null. */
export function ownerOf(name) {
  const m = /^test[-_:].*?[-_:](\d+)[-_:][0-9a-f]{8}(?=$|:)/.exec(name);
  return m ? Number(m[1]) : null;
}

/** The prefix a Redis key was created under: up to and including the owner marker, or `test…:` legacy. */
export function redisPrefixOf(key) {
  const m = /^test[-_:].*?[-_:]\d+[-_:][0-9a-f]{8}:/.exec(key);
  return m ? m[0] : null;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM'; // exists, owned by another user
  }
}

/** Is `name` (a test resource name) a leftover: a `test*` name whose owner process is gone? */
export function isLeftover(name) {
  if (!/^test[-_:]/.test(name)) return false;
  const pid = ownerOf(name);
  return pid === null || !alive(pid);
}

async function vhosts(mgmt) {
  const res = await httpGet(`${mgmt}/api/vhosts`);
  if (!res || res.status !== 200 || !Array.isArray(res.body))
    throw new Error(`GET /api/vhosts answered ${res?.status ?? 'nothing'}`);
  const leaked = res.body.map((v) => v.name).filter(isLeftover);
  const url = new URL(mgmt);
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  for (const name of leaked) {
    const del = await fetch(`${url.origin}/api/vhosts/${encodeURIComponent(name)}`, {
      method: 'DELETE',
      headers: { authorization: auth },
    });
    if (!del.ok && del.status !== 404) throw new Error(`DELETE vhost ${name} answered ${del.status}`);
  }
  return leaked.length;
}

async function databases(req, url) {
  const pg = req('pg');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT datname FROM pg_database WHERE datname LIKE 'test\\_%' AND NOT datistemplate`,
    );
    const leaked = rows.map((r) => r.datname).filter(isLeftover);
    for (const name of leaked) await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
    // Login roles the database-role tests create (`test_dbrole_…`): roles are cluster-wide, so they
    // outlive their database. After the databases: a role that still owns objects cannot be dropped,
    // and the one that owned a leaked database is free now. A role some live database still uses is
    // skipped (the next run retries).
    const roles = (await client.query(`SELECT rolname FROM pg_roles WHERE rolname LIKE 'test\\_%'`)).rows
      .map((r) => r.rolname)
      .filter(isLeftover);
    let dropped = 0;
    for (const name of roles) {
      const ok = await client.query(`DROP ROLE IF EXISTS "${name.replace(/"/g, '""')}"`).then(
        () => true,
        () => false,
      );
      if (ok) dropped += 1;
    }
    return { databases: leaked.length, roles: dropped };
  } finally {
    await client.end();
  }
}

async function redisKeys(req, url) {
  const Redis = req('ioredis');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  redis.on('error', () => undefined);
  await redis.connect();
  try {
    const prefixes = new Set();
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', 'test*', 'COUNT', 1000);
      cursor = next;
      const leaked = keys.filter((k) => isLeftover(redisPrefixOf(k) ?? k));
      for (const k of leaked) prefixes.add(redisPrefixOf(k) ?? 'test (no owner)');
      if (leaked.length > 0) deleted += await redis.unlink(...leaked);
    } while (cursor !== '0');
    return { keys: deleted, prefixes: prefixes.size };
  } finally {
    redis.disconnect();
  }
}

/**
 * The fault suites' private RabbitMQ nodes and haproxy processes whose suite was killed (e2e/chaos/
 * private-deps.ts, e2e/cluster/cluster.ts): a node is named `chaos-<pid>@…` or `cluster-<pid>-<n>@…`
 * (RABBITMQ_NODENAME in the VM's environment), the cluster's haproxy reads a config under
 * `<tmp>/cluster-<pid>-haproxy-…`; with the owner pid gone, the process is killed (SIGKILL: nobody
 * needs its data) and the cluster's `<tmp>/cluster-<pid>-…` directories removed. Linux only (/proc).
 */
export function sweepPrivateServers() {
  if (!existsSync('/proc/self/environ')) return { processes: 0, dirs: 0 };
  let processes = 0;
  const read = (file) => {
    try {
      return readFileSync(file, 'utf8').split('\0');
    } catch {
      return [];
    }
  };
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const argv = read(`/proc/${pid}/cmdline`);
    let owner = null;
    if (argv.some((a) => a.endsWith('beam.smp'))) {
      const name = read(`/proc/${pid}/environ`).find((v) => v.startsWith('RABBITMQ_NODENAME='));
      const m = name && /^RABBITMQ_NODENAME=(?:chaos|cluster)-(\d+)(?:-\d+)?@/.exec(name);
      if (m) owner = Number(m[1]);
    } else if (argv.some((a) => a.endsWith('haproxy'))) {
      const cfg = argv.find((a) => /[/\\]cluster-\d+-haproxy-[^/\\]+[/\\]haproxy\.cfg$/.test(a));
      if (cfg) owner = Number(/cluster-(\d+)-haproxy-/.exec(cfg)[1]);
    }
    if (owner === null || alive(owner)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      processes += 1;
    } catch {
      // gone meanwhile
    }
  }
  let dirs = 0;
  for (const name of readdirSync(tmpdir())) {
    const m = /^cluster-(\d+)-(?:rabbit\d+|haproxy)-/.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    rmSync(path.join(tmpdir(), name), { recursive: true, force: true });
    dirs += 1;
  }
  return { processes, dirs };
}

/** Deletes leaked test vhosts, databases, login roles and Redis keys on this machine's servers; reports what it did. */
export async function removeLeftovers(root, mgmt, env = process.env) {
  const req = createRequire(path.join(root, 'package.json'));
  const found = [];
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  const step = async (label, envVar, work) => {
    if (!target(env, envVar).local) return;
    try {
      const said = await work();
      if (said) found.push(said);
    } catch (err) {
      log.warn(`could not check for leaked test ${label} (${envVar}): ${err.message}`);
    }
  };
  await step('vhosts', 'AMQP_URL', async () => {
    const n = await vhosts(mgmt);
    return n && plural(n, 'vhost', 'vhosts');
  });
  await step('databases', 'DATABASE_URL', async () => {
    const r = await databases(req, target(env, 'DATABASE_URL').raw);
    const said = [
      r.databases && plural(r.databases, 'database', 'databases'),
      r.roles && plural(r.roles, 'login role', 'login roles'),
    ].filter(Boolean);
    return said.join(', ');
  });
  await step('Redis keys', 'REDIS_URL', async () => {
    const r = await redisKeys(req, target(env, 'REDIS_URL').raw);
    return r.keys && `${plural(r.keys, 'Redis key', 'Redis keys')} under ${plural(r.prefixes, 'prefix', 'prefixes')}`;
  });
  try {
    const r = sweepPrivateServers();
    if (r.processes || r.dirs)
      found.push(
        `${plural(r.processes, 'fault-suite RabbitMQ node or haproxy', 'fault-suite RabbitMQ nodes and haproxy processes')} (${plural(r.dirs, 'directory', 'directories')})`,
      );
  } catch (err) {
    log.warn(`could not check for the fault suites' leaked RabbitMQ nodes: ${err.message}`);
  }
  if (found.length) log.ok(`removed what killed test runs left behind: ${found.join(', ')}`);
  else log.ok('no leftovers of killed test runs');
}

/**
 * Each vhost with the whole topology holds about 64 quorum queues; with a limit of 1,024 open files a
 * node stalled at about 760 handles (docs/TESTING.md). Says so when a running node's limit is lower
 * than FD_ADVISED: the setup cannot raise the limit of a broker it did not start.
 */
export const FD_ADVISED = 4000;
export async function checkBrokerFileLimit(mgmt) {
  const res = await httpGet(`${mgmt}/api/nodes`);
  if (!res || res.status !== 200 || !Array.isArray(res.body)) return;
  for (const node of res.body) {
    if (typeof node.fd_total === 'number' && node.fd_total < FD_ADVISED) {
      log.warn(
        `RabbitMQ node ${node.name} may open only ${node.fd_total} files (${node.fd_used ?? '?'} in use); the test suite ` +
          `needs about ${FD_ADVISED} (each test vhost holds ~64 quorum queues). Restart it with a higher limit: ` +
          '`rabbitmqctl stop`, then `ulimit -n 65536; rabbitmq-server -detached` ' +
          '(systemd: LimitNOFILE=65536 in the unit). npm test raises it when it starts the broker itself.',
      );
    }
  }
}
