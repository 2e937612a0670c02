/**
 * Broker helpers for messaging's own integration tests. They live here, not in libs/testing,
 * because libs/messaging imports no other lib of this repository (lint enforces it): libs/testing
 * builds on messaging, so messaging's tests using it would make the two a cycle. The management
 * API calls go through the runtime's own `managementTargetFor` / `managementRequest`.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { managementRequest, managementTargetFor, type ManagementTarget } from '../../src';

/**
 * `rabbitmqctl` runs as the `rabbitmq` user (the package's wrapper switches to it). It is started
 * from `/`, a folder that user can read: from the caller's folder, when that is mode 0700 (a
 * `mktemp -d` clone, root's home), Erlang prints `File operation error: eacces. Target: .` instead of
 * the output (docs/TESTING.md, "Runs from any folder").
 */
const CLI_CWD = '/';
const run = (file: string, args: string[], options: { timeout?: number } = {}) =>
  promisify(execFile)(file, args, { ...options, cwd: CLI_CWD });
const BASE_AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface PeekedMessage {
  body: string;
  routingKey: string;
  properties: { message_id?: string; type?: string; correlation_id?: string; headers?: Record<string, unknown> };
}

export interface TestVhost {
  vhost: string;
  /** AMQP URL pointing at the vhost. */
  url: string;
  management: ManagementTarget;
  /** Ready and unacked messages of a queue, exact (rabbitmqctl; the management API's stats lag). */
  depth(queue: string): Promise<{ ready: number; unacked: number; total: number }>;
  /** Ready messages in a queue, asked over AMQP (current at once; excludes unacked). */
  ready(queue: string): Promise<number>;
  /** Takes up to `count` messages off a queue (acked), with their properties and headers. */
  take(queue: string, count?: number): Promise<PeekedMessage[]>;
  /** The vhost's queues as the management API lists them. */
  queues(): Promise<Array<{ name: string; type: string; arguments: Record<string, unknown> }>>;
  /** Closes this vhost's client connections, as a broker-side connection loss would. */
  closeConnections(): Promise<void>;
  /**
   * The same through the management API (DELETE /api/connections/<name>), this vhost's only, or
   * only those a runtime named `connectionName`; resolves with how many were closed.
   */
  dropConnections(connectionName?: string): Promise<number>;
  delete(): Promise<void>;
}

/** A vhost of its own per test file: queues, policies and connections cannot collide. */
export async function createTestVhost(prefix: string): Promise<TestVhost> {
  // `test-<prefix>-<owner pid>-<8 hex>`, the shape libs/testing's testResourceName gives (this lib may not
  // import it): npm test's setup deletes the names whose process is gone (docs/TESTING.md "Leftovers").
  const vhost = `test-${prefix}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const base = new URL(BASE_AMQP_URL);
  const url = `${base.protocol}//${base.username}:${base.password}@${base.host}/${encodeURIComponent(vhost)}`;
  const management = managementTargetFor(url, process.env.RABBITMQ_MANAGEMENT_URL);
  const v = encodeURIComponent(vhost);
  await expectOk(managementRequest(management, 'PUT', `/vhosts/${v}`, {}), `create vhost ${vhost}`);
  const permissions = { configure: '.*', write: '.*', read: '.*' };
  await expectOk(
    managementRequest(management, 'PUT', `/permissions/${v}/${encodeURIComponent(management.username)}`, permissions),
    `grant ${vhost}`,
  );

  return {
    vhost,
    url,
    management,
    async depth(queue) {
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
        return (await (await conn.createChannel()).checkQueue(queue)).messageCount;
      } finally {
        await conn.close().catch(() => undefined);
      }
    },
    async take(queue, count = 100) {
      const body = { count, ackmode: 'ack_requeue_false', encoding: 'auto', truncate: 50_000 };
      const res = await expectOk(
        managementRequest(management, 'POST', `/queues/${v}/${encodeURIComponent(queue)}/get`, body),
        `get from ${queue}`,
      );
      const rows = (await res.json()) as Array<{
        payload: string;
        routing_key: string;
        properties: PeekedMessage['properties'];
      }>;
      return rows.map((r) => ({ body: r.payload, routingKey: r.routing_key, properties: r.properties }));
    },
    async queues() {
      return (await (
        await expectOk(managementRequest(management, 'GET', `/queues/${v}`), `list queues of ${vhost}`)
      ).json()) as Awaited<ReturnType<TestVhost['queues']>>;
    },
    async closeConnections() {
      await run('rabbitmqctl', ['close_all_connections', '-q', '--vhost', vhost, 'test: injected connection loss']);
    },
    async dropConnections(connectionName) {
      const res = await expectOk(
        managementRequest(management, 'GET', `/vhosts/${v}/connections`),
        `list connections of ${vhost}`,
      );
      const connections = (await res.json()) as Array<{
        name: string;
        vhost: string;
        client_properties?: { connection_name?: string };
      }>;
      const own = connections.filter(
        (c) =>
          c.vhost === vhost &&
          (connectionName === undefined || c.client_properties?.connection_name === connectionName),
      );
      const closed = await Promise.all(
        own.map((c) => managementRequest(management, 'DELETE', `/connections/${encodeURIComponent(c.name)}`)),
      );
      return closed.filter((r) => r.ok).length;
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

/** Polls until `check` returns a truthy value, or fails with `what` after `timeoutMs`. */
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
