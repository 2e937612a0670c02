import { Writable } from 'node:stream';
import amqplib from 'amqplib';
import pino from 'pino';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { createPgPool } from '@community/db';
import { managementRequest } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  tcpProxy,
  type TcpProxy,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createIngest } from '../src/dlq/ingest';
import { dlqMetrics } from '../src/dlq/metrics';

/**
 * The DLQ ingest while Postgres is down, against a DLQ whose delivery limit is 3: a stand-in for
 * RabbitMQ 4.x, where a quorum queue without a limit set has one of 20 and a DLQ has no dead-letter
 * exchange, so a copy requeued past the limit is gone. The ingest must hold the copy (unacked, not
 * requeued) and store it once the database is back, however many times it tried meanwhile; its
 * delivery count rises only when its channel is lost. The ingest's pool reaches Postgres through a
 * TCP proxy the test closes, so only this file's connections see the outage.
 */
const DLQ = 'outage.work.dlq';
const DROPPING = 'outage.other.dlq';
const LIMIT = 3;

let db: TestDatabase;
let vhost: TestVhost;
let proxy: TcpProxy;
let pool: Pool;
const lines: Array<{ msg: string; messageId?: string }> = [];

async function setPolicy(name: string, queue: string): Promise<void> {
  const path = `/policies/${encodeURIComponent(vhost.vhost)}/${name}`;
  const res = await managementRequest(vhost.management, 'PUT', path, {
    pattern: `^${queue.replace(/\./g, '\\.')}$`,
    'apply-to': 'queues',
    priority: 10,
    definition: { 'delivery-limit': LIMIT },
  });
  expect(res.ok).toBe(true);
}

/** A copy in the DLQ as our consumers publish it (a persistent message with its error headers). */
async function deadLetter(queue: string, id: string): Promise<void> {
  const conn = await amqplib.connect(vhost.url);
  try {
    const ch = await conn.createConfirmChannel();
    ch.sendToQueue(queue, Buffer.from(JSON.stringify({ id, type: 'order.placed' })), {
      persistent: true,
      messageId: id,
      type: 'order.placed',
      headers: {
        'x-error-class': 'PermanentError',
        'x-error-message': `outage ${id}`,
        'x-error-kind': 'permanent',
        'x-original-queue': 'outage.work',
        'x-dead-lettered-at': new Date().toISOString(),
      },
    });
    await ch.waitForConfirms();
  } finally {
    await conn.close();
  }
}

/** The copy is in its DLQ, unacked (a quorum queue reports its counts every few seconds). */
const held = () =>
  eventually(
    'the copy held unacked in its DLQ',
    async () => JSON.stringify(await vhost.depth(DLQ)) === JSON.stringify({ ready: 0, unacked: 1, total: 1 }),
    20_000,
    200,
  );

const failures = (id: string) =>
  lines.filter((l) => l.messageId === id && l.msg.startsWith('dlq ingest failed')).length;

beforeAll(async () => {
  [db, vhost] = await Promise.all([createTestDatabase('rc_dlq_outage'), createTestVhost('rc-dlq-outage')]);
  const pg = new URL(db.url);
  proxy = await tcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  await proxy.open();
  pool = createPgPool(proxy.rewrite(db.url), { max: 4 });
  const conn = await amqplib.connect(vhost.url);
  const ch = await conn.createChannel();
  for (const q of [DLQ, DROPPING]) await ch.assertQueue(q, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await conn.close();
  await setPolicy('limit-work', DLQ);
  await setPolicy('limit-other', DROPPING);
  // The broker applies a policy to a queue asynchronously: wait until it reports it.
  await eventually(
    'the delivery limit in force on both DLQs',
    async () => {
      const res = await managementRequest(
        vhost.management,
        'GET',
        `/queues/${encodeURIComponent(vhost.vhost)}?columns=name,effective_policy_definition`,
      );
      const rows = (await res.json()) as Array<{ name: string; effective_policy_definition?: Record<string, unknown> }>;
      return rows.filter((r) => r.effective_policy_definition?.['delivery-limit'] === LIMIT).length === 2;
    },
    30_000,
    250,
  );
});

afterAll(async () => {
  await pool?.end();
  await proxy?.close();
  await Promise.all([db?.drop(), vhost?.delete()]);
});

describe('a quorum DLQ with a delivery limit and no dead-letter exchange (the 4.x default)', () => {
  it('drops a copy requeued past its limit: what a requeueing ingest did while Postgres was down', async () => {
    // The hazard itself, on this broker: without it the next test could pass for nothing.
    await deadLetter(DROPPING, 'dropped-1');
    const conn = await amqplib.connect(vhost.url);
    const ch = await conn.createChannel();
    let deliveries = 0;
    await ch.consume(DROPPING, (msg) => {
      if (!msg) return;
      deliveries += 1;
      ch.nack(msg, false, true);
    });
    await eventually(
      'the copy is gone from its DLQ',
      async () => (await vhost.depth(DROPPING)).total === 0,
      30_000,
      100,
    );
    await conn.close();
    expect(deliveries).toBe(LIMIT + 1);
    expect(await vhost.ready(DROPPING)).toBe(0);
  });
});

describe('the DLQ ingest while Postgres is down', () => {
  it('holds the copy without requeueing it, through a lost channel too, and stores it once when Postgres is back', async () => {
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = pino({ level: 'info' }, stream);
    const registry = new Registry();
    const ingest = createIngest({
      url: vhost.url,
      connectionName: 'outage dlq-ingest',
      pool,
      dlqs: [DLQ],
      logger,
      metrics: dlqMetrics(registry, pool, [DLQ], () => undefined),
      retryMs: 200,
      storeRetryMs: 50,
      storeRetryMaxMs: 200,
    });
    await proxy.close();
    await ingest.start();
    try {
      await eventually('the ingest consumes the DLQ', () => ingest.consuming().includes(DLQ), 15_000, 50);
      const id = 'held-1';
      await deadLetter(DLQ, id);
      // Twice the limit of failed stores: a requeue at each would have dropped the copy long ago.
      await eventually(`${2 * LIMIT + 2} failed stores of the copy`, () => failures(id) >= 2 * LIMIT + 2, 30_000, 50);
      await held();

      // A lost channel returns the held copy: one delivery counted, and the next session holds it again.
      await vhost.closeConnections();
      await eventually('the ingest consumes the DLQ again', () => ingest.consuming().includes(DLQ), 15_000, 50);
      const before = failures(id);
      await eventually('the copy fails again in the new session', () => failures(id) >= before + 2 * LIMIT, 30_000, 50);
      await held();

      await proxy.open();
      const row = await eventually(
        'the copy stored',
        async () => {
          const { rows } = await pool
            .query(`SELECT message_id, headers FROM dlq_messages WHERE message_id = $1`, [id])
            .catch(() => ({ rows: [] }));
          return rows.length === 1 ? rows[0] : undefined;
        },
        30_000,
        100,
      );
      expect(row.message_id).toBe(id);
      // Redelivered once (the lost channel), never for a failed store.
      expect(row.headers['x-delivery-count']).toBe(1);
      await eventually('the copy acked', async () => (await vhost.depth(DLQ)).total === 0, 30_000, 100);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM dlq_messages WHERE message_id = $1`, [id]);
      expect(rows[0].n).toBe(1);
    } finally {
      await ingest.stop();
    }
  });
});
