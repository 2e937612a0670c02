// npm test's setup removes what killed runs leaked (scripts/dev/setup/leftovers.mjs): a vhost, a
// database, a login role and Redis keys named for a process that is gone are deleted; those of a live process (this
// jest worker: another run still going) are kept. Runs the setup's own module in a child node, as
// `npm test` does, against the shared servers: it must not touch any other test's resources either,
// which every test file running beside it checks for us.
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import Redis from 'ioredis';
import { LOCAL_DEFAULTS } from '@community/config';
import { managementRequest, managementTargetFor } from '@community/messaging';
import { testResourceName } from '@community/testing';

const ROOT = path.resolve(__dirname, '../../..');
const AMQP_URL = process.env.AMQP_URL || LOCAL_DEFAULTS.AMQP_URL;
const DATABASE_URL = process.env.DATABASE_URL || LOCAL_DEFAULTS.DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL || LOCAL_DEFAULTS.REDIS_URL;
const management = managementTargetFor(AMQP_URL, process.env.RABBITMQ_MANAGEMENT_URL);

/** A pid that existed and is gone: a child that ran and exited. */
const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
const hex = () => randomBytes(4).toString('hex');
const names = {
  deadVhost: `test-leftovers-${deadPid}-${hex()}`,
  liveVhost: testResourceName('leftovers'),
  deadDb: `test_leftovers_${deadPid}_${hex()}`,
  liveDb: testResourceName('leftovers', '_'),
  deadRole: `test_leftovers_${deadPid}_${hex()}`,
  liveRole: testResourceName('leftovers_role', '_'),
  deadRedis: `test:leftovers:${deadPid}:${hex()}:`,
  liveRedis: `${testResourceName('leftovers', ':')}:`,
};

const admin = () => {
  const u = new URL(DATABASE_URL);
  u.pathname = '/postgres';
  return new pg.Client({ connectionString: u.toString() });
};
async function sql<T extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<T[]> {
  const c = admin();
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}
const vhostExists = async (v: string) =>
  (await managementRequest(management, 'GET', `/vhosts/${encodeURIComponent(v)}`)).status === 200;
const dbExists = async (d: string) => (await sql('SELECT 1 FROM pg_database WHERE datname = $1', [d])).length === 1;
const roleExists = async (r: string) => (await sql('SELECT 1 FROM pg_roles WHERE rolname = $1', [r])).length === 1;

let redis: Redis;
beforeAll(async () => {
  expect(() => process.kill(deadPid, 0)).toThrow(); // really gone
  redis = new Redis(REDIS_URL);
  for (const v of [names.deadVhost, names.liveVhost]) {
    expect((await managementRequest(management, 'PUT', `/vhosts/${encodeURIComponent(v)}`, {})).ok).toBe(true);
  }
  for (const d of [names.deadDb, names.liveDb]) await sql(`CREATE DATABASE "${d}"`);
  for (const r of [names.deadRole, names.liveRole]) await sql(`CREATE ROLE "${r}" LOGIN`);
  for (const p of [names.deadRedis, names.liveRedis]) await redis.mset(`${p}feed:a`, '1', `${p}feed:b`, '2');
});

afterAll(async () => {
  for (const v of [names.deadVhost, names.liveVhost])
    await managementRequest(management, 'DELETE', `/vhosts/${encodeURIComponent(v)}`).catch(() => undefined);
  for (const d of [names.deadDb, names.liveDb]) await sql(`DROP DATABASE IF EXISTS "${d}" WITH (FORCE)`);
  for (const r of [names.deadRole, names.liveRole]) await sql(`DROP ROLE IF EXISTS "${r}"`);
  await redis.del(
    `${names.deadRedis}feed:a`,
    `${names.deadRedis}feed:b`,
    `${names.liveRedis}feed:a`,
    `${names.liveRedis}feed:b`,
  );
  redis.disconnect();
});

it("deletes the vhosts, databases, login roles and Redis keys of a process that is gone, and keeps a live process's", async () => {
  const script = `
    const root = ${JSON.stringify(ROOT)};
    const { loadProjectRules } = await import(root + '/scripts/dev/setup/project-rules.mjs');
    await loadProjectRules(root);
    const { managementUrl } = await import(root + '/scripts/dev/setup/targets.mjs');
    const { removeLeftovers } = await import(root + '/scripts/dev/setup/leftovers.mjs');
    await removeLeftovers(root, managementUrl(process.env), process.env);`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: process.env,
  });
  expect(stdout).toMatch(/removed what killed test runs left behind: .*vhost.*database.*login role.*Redis keys? under/);

  expect(await vhostExists(names.deadVhost)).toBe(false);
  expect(await vhostExists(names.liveVhost)).toBe(true);
  expect(await dbExists(names.deadDb)).toBe(false);
  expect(await dbExists(names.liveDb)).toBe(true);
  expect(await roleExists(names.deadRole)).toBe(false);
  expect(await roleExists(names.liveRole)).toBe(true);
  expect(await redis.exists(`${names.deadRedis}feed:a`, `${names.deadRedis}feed:b`)).toBe(0);
  expect(await redis.exists(`${names.liveRedis}feed:a`, `${names.liveRedis}feed:b`)).toBe(2);
}, 120_000);
