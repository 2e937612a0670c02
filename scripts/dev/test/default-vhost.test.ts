// `npm start`'s setup removes the stale copy of the project's queues from vhost `/`
// (scripts/dev/setup/default-vhost.mjs): an empty queue of the topology with no consumer goes; one
// holding a message or with a consumer stays and is named; a queue that is not the topology's stays
// untouched, and so does the same-named queue in another vhost. The shared broker's `/` belongs to
// whoever else uses it, so the module runs (in a child node, as `npm start` does) against a test
// vhost standing in for `/`.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import amqplib, { type ChannelModel } from 'amqplib';
import { createTestVhost, type TestVhost } from '@community/testing';

const ROOT = path.resolve(__dirname, '../../..');
// Queues of the topology (infra/rabbitmq/definitions.json): a work queue, a retry queue, a DLQ.
const EMPTY = ['email-service.send', 'email-service.send.dlq'];
const WITH_MESSAGE = 'notification-service.critical';
const WITH_CONSUMER = 'feed-service.activity';
const NOT_OURS = 'someone-else.work';

let stale: TestVhost;
let other: TestVhost;
let consumer: ChannelModel;

async function declare(vhost: TestVhost, names: string[]): Promise<void> {
  const conn = await amqplib.connect(vhost.url);
  const ch = await conn.createChannel();
  for (const name of names) await ch.assertQueue(name, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await conn.close();
}

beforeAll(async () => {
  [stale, other] = await Promise.all([createTestVhost('stale-slash'), createTestVhost('stale-other')]);
  await declare(stale, [...EMPTY, WITH_MESSAGE, WITH_CONSUMER, NOT_OURS]);
  await declare(other, EMPTY);
  const conn = await amqplib.connect(stale.url);
  const ch = await conn.createConfirmChannel();
  ch.sendToQueue(WITH_MESSAGE, Buffer.from('{}'), { persistent: true });
  await ch.waitForConfirms();
  await conn.close();
  consumer = await amqplib.connect(stale.url);
  await (await consumer.createChannel()).consume(WITH_CONSUMER, () => undefined);
}, 60_000);

afterAll(async () => {
  await consumer?.close().catch(() => undefined);
  await Promise.all([stale?.delete(), other?.delete()]);
});

async function exists(vhost: TestVhost, queue: string): Promise<boolean> {
  const conn = await amqplib.connect(vhost.url);
  const ch = await conn.createChannel();
  ch.on('error', () => undefined);
  try {
    await ch.checkQueue(queue);
    return true;
  } catch {
    return false;
  } finally {
    await conn.close().catch(() => undefined);
  }
}

it('removes the empty, unconsumed queues of the topology, keeps and names the rest, and touches no other vhost', async () => {
  const script = `
    const root = ${JSON.stringify(ROOT)};
    const { loadProjectRules } = await import(root + '/scripts/dev/setup/project-rules.mjs');
    await loadProjectRules(root);
    const { managementUrl } = await import(root + '/scripts/dev/setup/targets.mjs');
    const { removeStaleDefaultVhostQueues } = await import(root + '/scripts/dev/setup/default-vhost.mjs');
    const result = await removeStaleDefaultVhostQueues(root, managementUrl(process.env), { vhost: 'community' }, process.env, { vhost: ${JSON.stringify(stale.vhost)} });
    console.log('RESULT ' + JSON.stringify(result));`;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: process.env,
  });
  const result = JSON.parse(/^RESULT (.*)$/m.exec(stdout)?.[1] ?? 'null');
  expect(result.removed).toBe(EMPTY.length);
  expect(result.kept).toEqual(
    expect.arrayContaining([
      { name: WITH_MESSAGE, messages: 1, consumers: 0 },
      { name: WITH_CONSUMER, messages: 0, consumers: 1 },
    ]),
  );
  expect(result.kept).toHaveLength(2);
  // What it did, in the setup's log.
  expect(stdout).toMatch(
    new RegExp(`removed ${EMPTY.length} empty queue\\(s\\) with no consumer from vhost ${stale.vhost}`),
  );
  expect(stderr).toMatch(
    /kept 2 queue\(s\) of the project's topology .*notification-service\.critical \(1 messages, 0 consumers\)/,
  );

  for (const q of EMPTY) expect(await exists(stale, q)).toBe(false);
  for (const q of [WITH_MESSAGE, WITH_CONSUMER, NOT_OURS]) expect(await exists(stale, q)).toBe(true);
  expect(await stale.ready(WITH_MESSAGE)).toBe(1);
  for (const q of EMPTY) expect(await exists(other, q)).toBe(true);
}, 60_000);

it('does nothing when the apps themselves use that vhost (AMQP_URL set: no project vhost)', async () => {
  const script = `
    const root = ${JSON.stringify(ROOT)};
    const { loadProjectRules } = await import(root + '/scripts/dev/setup/project-rules.mjs');
    await loadProjectRules(root);
    const { managementUrl } = await import(root + '/scripts/dev/setup/targets.mjs');
    const { removeStaleDefaultVhostQueues } = await import(root + '/scripts/dev/setup/default-vhost.mjs');
    console.log('RESULT ' + JSON.stringify(await removeStaleDefaultVhostQueues(root, managementUrl(process.env), { vhost: null }, process.env, { vhost: ${JSON.stringify(other.vhost)} })));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: process.env,
  });
  expect(stdout).toContain('RESULT null');
  for (const q of EMPTY) expect(await exists(other, q)).toBe(true);
}, 60_000);
