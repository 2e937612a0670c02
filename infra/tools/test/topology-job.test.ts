// The Kubernetes topology Job's script (infra/k8s/base/topology/apply-topology.sh), run with sh and
// curl against the local broker as the Job runs it: users get the passwords of their Secrets (never
// the development hashes), and the definitions are imported.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { managementRequest } from '@community/messaging';
import { createTestVhost, type TestVhost } from '@community/testing';
import { buildDefinitions, devPassword } from '../src';

const run = promisify(execFile);
const SCRIPT = path.resolve(__dirname, '../../k8s/base/topology/apply-topology.sh');
const prefix = `tj${randomBytes(3).toString('hex')}-`;
let vhost: TestVhost;
let dir: string;
const passwords = new Map<string, string>();

beforeAll(async () => {
  vhost = await createTestVhost('topology-job');
  dir = mkdtempSync(path.join(tmpdir(), 'topology-job-'));
  const { users, ...withoutUsers } = buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix });
  mkdirSync(path.join(dir, 'topology'));
  writeFileSync(path.join(dir, 'topology/definitions.json'), JSON.stringify(withoutUsers));
  writeFileSync(path.join(dir, 'topology/users.tsv'), users.map((u) => `${u.name}\t${u.tags.join(',')}\n`).join(''));
  for (const u of users) {
    passwords.set(u.name, randomBytes(24).toString('hex'));
    mkdirSync(path.join(dir, 'users', u.name), { recursive: true });
    writeFileSync(path.join(dir, 'users', u.name, 'password'), passwords.get(u.name)!);
  }
});

afterAll(async () => {
  await managementRequest(vhost.management, 'POST', '/users/bulk-delete', { users: [...passwords.keys()] });
  await vhost.delete();
  rmSync(dir, { recursive: true, force: true });
});

const runJob = () =>
  run('sh', [SCRIPT], {
    env: {
      PATH: process.env.PATH,
      RABBITMQ_MANAGEMENT_URL: vhost.management.baseUrl,
      ADMIN_USERNAME: vhost.management.username,
      ADMIN_PASSWORD: vhost.management.password,
      TOPOLOGY_DIR: path.join(dir, 'topology'),
      USERS_DIR: path.join(dir, 'users'),
    },
  });

const connectAs = async (user: string, password: string) => {
  const base = new URL(vhost.url);
  const conn = await amqplib.connect(
    `${base.protocol}//${encodeURIComponent(user)}:${password}@${base.host}/${encodeURIComponent(vhost.vhost)}`,
  );
  await conn.close();
};

it('sets each user’s password from its Secret and imports the topology; the development password does not work', async () => {
  const { stdout } = await runJob();
  expect(stdout).toMatch(/definitions imported/);
  const user = `${prefix}notification-service`;
  await expect(connectAs(user, passwords.get(user)!)).resolves.toBeUndefined();
  await expect(connectAs(user, devPassword('notification-service'))).rejects.toThrow(/ACCESS_REFUSED|403/);
  expect(await vhost.ready('notification-service.critical')).toBe(0); // the queue exists (a passive declare)
  // Idempotent: a second run (the next deploy) succeeds the same way.
  await expect(runJob()).resolves.toBeDefined();
});

it('refuses a password with characters that would need escaping, naming the user', async () => {
  const user = `${prefix}reconciler`;
  writeFileSync(path.join(dir, 'users', user, 'password'), 'has"quote');
  await expect(runJob()).rejects.toMatchObject({ stderr: expect.stringContaining(`password of ${user}`) });
  writeFileSync(path.join(dir, 'users', user, 'password'), passwords.get(user)!);
});
