// The volunteer's management login, as the generated definitions create it (tag `monitoring`,
// permissions `^$ ^$ ^$` on the vhost), on the real local broker: it sees the queues, their depth
// and every vhost, and each button of the management UI that changes a queue is refused. The UI
// calls exactly these API routes (Purge, Delete, Get messages, Publish, a policy).
import { randomBytes } from 'node:crypto';
import { managementRequest, type ManagementTarget } from '@community/messaging';
import { createTestVhost, eventually, type TestVhost } from '@community/testing';
import { buildDefinitions, devPassword } from '../src';

const QUEUE = 'volunteer-probe.work';
let vhost: TestVhost;
let prefix: string;
let volunteer: ManagementTarget;
const e = encodeURIComponent;

beforeAll(async () => {
  vhost = await createTestVhost('volunteer');
  prefix = `t${randomBytes(3).toString('hex')}-`;
  // Only the volunteer's entries of the generated definitions: its user and its permission.
  const defs = buildDefinitions({ vhost: vhost.vhost, userPrefix: prefix });
  const user = defs.users.find((u) => u.name === `${prefix}volunteer`);
  const permission = defs.permissions.find((p) => p.user === `${prefix}volunteer`);
  expect(user?.tags).toEqual(['monitoring']);
  expect(permission).toMatchObject({ configure: '^$', write: '^$', read: '^$' });
  const res = await managementRequest(vhost.management, 'POST', '/definitions', {
    users: [user],
    permissions: [permission],
  });
  if (!res.ok) throw new Error(`definitions import: HTTP ${res.status} ${await res.text()}`);
  volunteer = { ...vhost.management, username: `${prefix}volunteer`, password: devPassword('volunteer') };

  // A work queue holding one message, as the administrator (guest) makes it.
  const put = await managementRequest(vhost.management, 'PUT', `/queues/${e(vhost.vhost)}/${e(QUEUE)}`, {
    durable: true,
    arguments: { 'x-queue-type': 'quorum' },
  });
  expect(put.status).toBeLessThan(300);
  const pub = await managementRequest(vhost.management, 'POST', `/exchanges/${e(vhost.vhost)}/amq.default/publish`, {
    properties: {},
    routing_key: QUEUE,
    payload: '{}',
    payload_encoding: 'string',
  });
  expect(await pub.json()).toEqual({ routed: true });
});

afterAll(async () => {
  await managementRequest(vhost.management, 'DELETE', `/users/${e(`${prefix}volunteer`)}`);
  await vhost.delete();
});

it('lists the queues with their depth, and sees every vhost and the nodes', async () => {
  await eventually('the queue and its message listed for the volunteer', async () => {
    const res = await managementRequest(volunteer, 'GET', `/queues/${e(vhost.vhost)}`);
    if (res.status !== 200) return false;
    const queues = (await res.json()) as Array<{ name: string; messages?: number }>;
    return queues.find((q) => q.name === QUEUE)?.messages === 1;
  });
  const vhosts = (await (await managementRequest(volunteer, 'GET', '/vhosts')).json()) as Array<{ name: string }>;
  expect(vhosts.map((v) => v.name)).toEqual(expect.arrayContaining(['/', vhost.vhost]));
  expect((await managementRequest(volunteer, 'GET', '/nodes')).status).toBe(200);
  expect((await managementRequest(volunteer, 'GET', '/overview')).status).toBe(200);
});

it.each([
  ['Purge', 'DELETE', `/contents`, undefined],
  ['Delete', 'DELETE', '', undefined],
  // "Get messages" takes messages off the queue in its reject/ack modes: refused in every mode.
  ['Get messages', 'POST', '/get', { count: 1, ackmode: 'ack_requeue_false', encoding: 'auto' }],
])("is refused the queue's %s button (401), and the message stays", async (_button, method, suffix, body) => {
  const res = await managementRequest(volunteer, method, `/queues/${e(vhost.vhost)}/${e(QUEUE)}${suffix}`, body);
  expect(res.status).toBe(401);
  expect(await vhost.ready(QUEUE)).toBe(1);
});

it('may not publish, nor set a policy', async () => {
  const pub = await managementRequest(volunteer, 'POST', `/exchanges/${e(vhost.vhost)}/amq.default/publish`, {
    properties: {},
    routing_key: QUEUE,
    payload: 'x',
    payload_encoding: 'string',
  });
  expect(pub.ok).toBe(false);
  expect(await pub.text()).toMatch(/ACCESS_REFUSED/);
  const policy = await managementRequest(volunteer, 'PUT', `/policies/${e(vhost.vhost)}/volunteer-probe`, {
    pattern: '.*',
    definition: { 'max-length': 0 },
    'apply-to': 'queues',
  });
  expect(policy.status).toBe(401);
  expect(await vhost.ready(QUEUE)).toBe(1);
});
