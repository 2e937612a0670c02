/**
 * npm run bench:outbox — outbox relay throughput (rows enqueued in batches → published with confirms
 * → marked sent) beside a bare amqplib confirm channel publishing the same messages, same broker,
 * same run.
 *
 * Each round enqueues BENCH_MESSAGES rows (BENCH_BATCH per transaction, spread over BENCH_AGGREGATES
 * aggregates), then times one relay draining them: from start() until no unsent row is left. The
 * baseline publishes the same bodies with the same properties (mandatory, persistent) through the
 * same topic exchange into the same kind of quorum queue, in windows of BENCH_BATCH messages and
 * awaiting the window's confirms, which is what one relay cycle does minus the database. Rounds
 * alternate (bare, relay, ...) so drift on a shared machine hits both; medians are reported.
 *
 * Env: BENCH_MESSAGES (20000), BENCH_BATCH (200), BENCH_AGGREGATES (2000), BENCH_ROUNDS (3).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import amqplib from 'amqplib';
import type { Pool } from 'pg';
import pino from 'pino';
import { Registry } from 'prom-client';
import { buildEvent, type EventOf } from '@community/contracts';
import { classifyPgError, createPgPool, withTransaction } from '@community/db';
import { createMessaging, type Topology } from '@community/messaging';
import { createTestDatabase, createTestVhost, median } from '@community/testing';
import { createRelay, enqueueEvents } from '../src';

const N = Number(process.env.BENCH_MESSAGES ?? 20_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 200);
const AGGREGATES = Number(process.env.BENCH_AGGREGATES ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PRODUCER = 'bench';

const topology: Topology = {
  exchanges: [{ name: 'community.events', type: 'topic' }],
  queues: [
    {
      name: 'bench.relay',
      bindings: [{ exchange: 'community.events', routingKeys: ['user.mentioned'] }],
      retryDelaysMs: [1000],
    },
    {
      name: 'bench.bare',
      bindings: [{ exchange: 'community.events', routingKeys: ['bench.bare'] }],
      retryDelaysMs: [1000],
    },
  ],
};

function events(): Array<EventOf<'user.mentioned'>> {
  return Array.from({ length: N }, (_, i) =>
    buildEvent(
      'user.mentioned',
      {
        commentId: `comment-${i}`,
        postId: 'post-42',
        actorId: 'user-1',
        mentionedUserId: `user-${i % AGGREGATES}`,
        excerpt: 'x'.repeat(80),
      },
      { producer: PRODUCER },
    ),
  );
}

async function enqueueAll(pool: Pool, batch: Array<EventOf<'user.mentioned'>>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < batch.length; i += BATCH) {
    const items = batch.slice(i, i + BATCH).map((event) => ({ event, aggregateId: event.data.mentionedUserId }));
    await withTransaction(pool, (tx) => enqueueEvents(tx, PRODUCER, items));
  }
  return batch.length / ((performance.now() - t0) / 1000);
}

async function relayRound(url: string, pool: Pool, databaseUrl: string): Promise<number> {
  const registry = new Registry();
  const logger = pino({ level: 'warn' });
  const messaging = createMessaging({
    url,
    service: 'bench-relay',
    topology,
    logger,
    registry,
    classifiers: [classifyPgError],
  });
  await messaging.start();
  const relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger,
    registry,
    databaseUrl,
    batchSize: BATCH,
  });
  const t0 = performance.now();
  await relay.start();
  for (;;) {
    const { rows } = await pool.query<{ left: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM outbox_messages WHERE producer = $1 AND sent_at IS NULL) AS left',
      [PRODUCER],
    );
    if (!rows[0].left) break;
    await sleep(10);
  }
  const rate = N / ((performance.now() - t0) / 1000);
  await relay.stop();
  await messaging.stop(1000);
  return rate;
}

async function bareRound(url: string, batch: Array<EventOf<'user.mentioned'>>): Promise<number> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  const t0 = performance.now();
  for (let i = 0; i < batch.length; i += BATCH) {
    for (const e of batch.slice(i, i + BATCH)) {
      ch.publish('community.events', 'bench.bare', Buffer.from(JSON.stringify(e)), {
        mandatory: true,
        persistent: true,
        contentType: 'application/json',
        messageId: e.id,
        type: e.type,
        timestamp: Math.floor(Date.parse(e.occurredAt) / 1000),
        correlationId: e.correlationId,
        headers: { 'x-schema-version': e.version },
      });
    }
    await ch.waitForConfirms();
  }
  const rate = batch.length / ((performance.now() - t0) / 1000);
  await conn.close();
  return rate;
}

async function purge(url: string): Promise<void> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  await ch.purgeQueue('bench.relay');
  await ch.purgeQueue('bench.bare');
  await conn.close();
}

async function main() {
  const [vhost, db] = await Promise.all([createTestVhost('bench-outbox'), createTestDatabase('bench_outbox')]);
  const pool = createPgPool(db.url, { max: 4 });
  try {
    // Declare the queues (and their policies) once, before the first round.
    const setup = createMessaging({
      url: vhost.url,
      service: 'bench-setup',
      topology,
      logger: pino({ level: 'warn' }),
      registry: new Registry(),
      classifiers: [classifyPgError],
    });
    await setup.start();
    await setup.stop();
    const bares: number[] = [];
    const relays: number[] = [];
    const enqueues: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const batch = events();
      const bare = await bareRound(vhost.url, batch);
      const enqueue = await enqueueAll(pool, batch);
      const relay = await relayRound(vhost.url, pool, db.url);
      bares.push(bare);
      enqueues.push(enqueue);
      relays.push(relay);
      await purge(vhost.url);
      await pool.query('VACUUM ANALYZE outbox_messages');
      console.log(
        `round ${r}: bare ${bare.toFixed(0)} msg/s, relay ${relay.toFixed(0)} rows/s, enqueue ${enqueue.toFixed(0)} rows/s`,
      );
    }
    const b = median(bares);
    const rl = median(relays);
    console.log(
      `\n${N} messages x ${ROUNDS} rounds, ${AGGREGATES} aggregates, batch ${BATCH}, quorum queue, ~400 B envelopes`,
    );
    console.log(`bare confirm channel  : ${b.toFixed(0)} msg/s (median; windows of ${BATCH}, await confirms)`);
    console.log(`outbox relay          : ${rl.toFixed(0)} rows/s (median; claim, publish, confirm, mark, commit)`);
    console.log(`ratio relay / bare    : ${(rl / b).toFixed(2)}`);
    console.log(
      `enqueue (producer side): ${median(enqueues).toFixed(0)} rows/s (median; ${BATCH} rows per transaction)`,
    );
  } finally {
    await pool.end();
    await Promise.all([vhost.delete(), db.drop()]);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
