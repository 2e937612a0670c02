import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import amqplib from 'amqplib';
import { LOCAL_DEFAULTS } from '@community/config';
import { managementRequest, managementTargetFor, type ManagementTarget } from '@community/messaging';
import { testResourceName } from './names';

/**
 * `rabbitmqctl` runs as the `rabbitmq` user (the package's wrapper switches to it). It is started
 * from `/`, a folder that user can read: from the caller's folder, when that is mode 0700 (a
 * `mktemp -d` clone, root's home), Erlang prints `File operation error: eacces. Target: .` instead of
 * the output (docs/TESTING.md, "Runs from any folder").
 */
const CLI_CWD = '/';
const run = (file: string, args: string[], options: { timeout?: number } = {}) =>
  promisify(execFile)(file, args, { ...options, cwd: CLI_CWD });

/**
 * The test broker's management API, found and called the way the runtime does it (libs/messaging's
 * `managementTargetFor` and `managementRequest`): RABBITMQ_MANAGEMENT_URL if set, else port 15672 on
 * the AMQP host, with the AMQP credentials.
 */
const managementTarget = (amqpUrl: string): ManagementTarget =>
  managementTargetFor(amqpUrl, process.env.RABBITMQ_MANAGEMENT_URL);

const BASE_AMQP_URL = process.env.AMQP_URL || LOCAL_DEFAULTS.AMQP_URL;

export interface TestVhost {
  vhost: string;
  /** AMQP_URL pointing at the vhost. */
  url: string;
  management: ManagementTarget;
  /** Messages in a queue (ready + unacked), from the management API. */
  depth(queue: string): Promise<{ ready: number; unacked: number; total: number }>;
  /** Ready messages in a queue, asked over AMQP (fast; excludes unacked). */
  ready(queue: string): Promise<number>;
  /** Takes up to `count` messages off a queue (acked), with their properties and headers. */
  take(queue: string, count?: number): Promise<PeekedMessage[]>;
  /** Closes this vhost's client connections, as `rabbitmqctl close_all_connections --vhost` does. */
  closeConnections(): Promise<void>;
  delete(): Promise<void>;
}

export interface PeekedMessage {
  body: string;
  routingKey: string;
  properties: { message_id?: string; type?: string; correlation_id?: string; headers?: Record<string, unknown> };
}

/** A vhost of its own per test file: queues, policies and connections cannot collide. */
export async function createTestVhost(prefix: string): Promise<TestVhost> {
  const vhost = testResourceName(prefix);
  const base = new URL(BASE_AMQP_URL);
  const url = `${base.protocol}//${base.username}:${base.password}@${base.host}/${encodeURIComponent(vhost)}`;
  const management = managementTarget(url);
  const v = encodeURIComponent(vhost);
  await expectOk(managementRequest(management, 'PUT', `/vhosts/${v}`, {}), `create vhost ${vhost}`);
  await expectOk(
    managementRequest(management, 'PUT', `/permissions/${v}/${encodeURIComponent(management.username)}`, {
      configure: '.*',
      write: '.*',
      read: '.*',
    }),
    `grant permissions on ${vhost}`,
  );

  return {
    vhost,
    url,
    management,
    async depth(queue) {
      // The management API refreshes queue stats every few seconds; `rabbitmqctl` is exact.
      const { stdout } = await run('rabbitmqctl', [
        'list_queues',
        '-q',
        '--no-table-headers',
        '-p',
        vhost,
        'name',
        'messages_ready',
        'messages_unacknowledged',
      ]);
      const line = stdout
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .find((cols) => cols[0] === queue);
      if (!line) throw new Error(`queue ${queue} not found in ${vhost}`);
      const ready = Number(line[1]);
      const unacked = Number(line[2]);
      return { ready, unacked, total: ready + unacked };
    },
    async ready(queue) {
      const conn = await amqplib.connect(url);
      try {
        const ch = await conn.createChannel();
        return (await ch.checkQueue(queue)).messageCount;
      } finally {
        await conn.close().catch(() => undefined);
      }
    },
    async take(queue, count = 100) {
      const res = await expectOk(
        managementRequest(management, 'POST', `/queues/${v}/${encodeURIComponent(queue)}/get`, {
          count,
          ackmode: 'ack_requeue_false',
          encoding: 'auto',
          truncate: 50_000,
        }),
        `get from ${queue}`,
      );
      const rows = (await res.json()) as Array<{
        payload: string;
        routing_key: string;
        properties: PeekedMessage['properties'];
      }>;
      return rows.map((r) => ({ body: r.payload, routingKey: r.routing_key, properties: r.properties }));
    },
    async closeConnections() {
      await run('rabbitmqctl', ['close_all_connections', '-q', '--vhost', vhost, 'test: injected connection loss']);
    },
    async delete() {
      await managementRequest(management, 'DELETE', `/vhosts/${v}`).catch(() => undefined);
    },
  };
}

async function expectOk(p: Promise<Response>, what: string): Promise<Response> {
  const res = await p;
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

export async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run('rabbitmqctl', args, { timeout: 120_000 });
  return stdout;
}

/** Polls until `check` returns a truthy value, or fails with `what` after `timeoutMs` (default 30 s: generous, since a deadline only matters when the condition never comes, and a loaded 2-core CI machine is slow). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for: ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}
