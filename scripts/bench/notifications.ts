/**
 * npm run bench:notifications — the notification-service as a real child process (main.ts) on its
 * own vhost and database, measured three ways in one run:
 *
 * 1. Sustained throughput, end to end through the public contract: N user.mentioned events
 *    published with confirms → committed notification row + unread counter → its
 *    notification.created received by the bench on a quorum queue of its own, bound on the events
 *    exchange as email-service's is. Baselines on the same broker, in the same run, publishing the
 *    same prebuilt bodies through the same windowed publisher: the bare one-hop pipeline (publish
 *    with confirms → quorum queue → consume + ack) and the bare two-hop pipeline (→ quorum queue →
 *    a consumer that publishes each message on with confirms and acks it after the confirm →
 *    second quorum queue → consume + ack), which is what the service's path costs the broker.
 *    CPU per event: CPU seconds of the service, RabbitMQ, every postgres process and this script
 *    over the phase, divided by the events; the same for the two-hop baseline.
 * 2. Latency at a fixed offered rate (default 1,000 events/s): publish → committed and visible,
 *    and publish → its notification.created received. "Visible" is the service's own inbox NOTIFY
 *    (sent at commit, the signal SSE streams push on), received by the bench on a LISTEN
 *    connection; every event targets its own user, so each notification names exactly one event.
 *    Baseline in the same run: the same publisher at the same rate into a quorum queue with a bare
 *    amqplib consumer (publish → delivered).
 * 3. The service's resident memory (VmRSS of the child's /proc/<pid>/status), sampled throughout.
 *
 * Order of the run: the bare latency baseline; the service's latency (after a warm-up of
 * BENCH_WARMUP_SECONDS at the same rate and a wait for a quiet machine); the bare one-hop and
 * two-hop throughput; the service's throughput.
 * Latency comes first because a burst leaves the broker busy for a while after it (see
 * docs/BENCHMARKS.md), which would be measured as latency of whatever comes next.
 *
 * The child runs as BENCH_RUNNER says: `bundle` (default; the esbuild bundle of
 * scripts/dev/setup/bundle.mjs run by plain node, as `npm start` and a production image run it) or
 * `swc` (node -r @swc-node/register, as the tests run it; the on-the-fly compiler adds ~100 MB of RSS).
 *
 * Env: BENCH_EVENTS (default 60000), BENCH_RATE (1000), BENCH_LATENCY_SECONDS (10), BENCH_WARMUP_SECONDS (5),
 * BENCH_USERS (10000 recipients in the throughput phase), BENCH_WINDOW (publisher confirms outstanding, 2000),
 * BENCH_RUNNER (bundle | swc), BENCH_NODE_ARGS (node flags for the service, e.g. --cpu-prof); the
 * service's own tunables (CONSUMER_BATCH_SIZE, ...) pass through.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import amqplib from 'amqplib';
import pg from 'pg';
import pino from 'pino';
import { Registry } from 'prom-client';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { createMessaging, type Topology } from '@community/messaging';
import { createTestDatabase, createTestVhost, freePort } from '@community/testing';
import {
  cpuSeconds,
  machineCpu,
  mentionBody,
  percentiles,
  pidsOf,
  publishAll as publishWindowed,
  PUBLISHER_USER,
  startNotificationServiceProcess,
} from './support';

/** Publishes every body with confirms, at most WINDOW unconfirmed at a time. */
const publishAll = (ch: amqplib.ConfirmChannel, exchange: string, routingKey: string, bodies: Buffer[]) =>
  publishWindowed(ch, exchange, routingKey, bodies, WINDOW);

const N = Number(process.env.BENCH_EVENTS ?? 60_000);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? 10);
const USERS = Number(process.env.BENCH_USERS ?? 10_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 2000);
const RUNNER = process.env.BENCH_RUNNER === 'swc' ? 'swc' : 'bundle';
/** Machine busy percentage under which the latency phases may start. */
const QUIET_PERCENT = 15;
/** Seconds of offered load before the latency phase, not measured (JIT, connection pool, plans). */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);

/** The bare pipelines' topology on their own vhost: the exchange and two quorum queues. */
async function declareBare(url: string): Promise<void> {
  const topology: Topology = {
    exchanges: [{ name: 'community.events', type: 'topic' }],
    queues: [
      {
        name: 'bench.bare',
        bindings: [{ exchange: 'community.events', routingKeys: ['bench.bare'] }],
        retryDelaysMs: [1000],
      },
      {
        name: 'bench.bare.latency',
        bindings: [{ exchange: 'community.events', routingKeys: ['bench.bare.latency'] }],
        retryDelaysMs: [1000],
      },
      {
        name: 'bench.bare.hop1',
        bindings: [{ exchange: 'community.events', routingKeys: ['bench.bare.hop1'] }],
        retryDelaysMs: [1000],
      },
      // The second hop, and the extra queues it also lands in when it fans out like notification.created.
      ...Array.from({ length: CREATED_FANOUT }, (_, i) => ({
        name: i === 0 ? 'bench.bare.hop2' : `bench.bare.hop2.copy${i}`,
        bindings: [
          {
            exchange: 'community.events',
            routingKeys: i === 0 ? ['bench.bare.hop2', 'bench.bare.fanout'] : ['bench.bare.fanout'],
          },
        ],
        retryDelaysMs: [1000],
      })),
    ],
  };
  const setup = createMessaging({
    url,
    service: 'bench-setup',
    topology,
    logger: pino({ level: 'warn' }),
    registry: new Registry(),
    classifiers: [],
  });
  await setup.start();
  await setup.stop();
}

/** Bare amqplib: publish with confirms into a quorum queue while a consumer acks each message. */
async function bare(url: string): Promise<number> {
  const bodies = Array.from({ length: N }, (_, i) => mentionBody(i, `user-${i % USERS}`, 'bare'));
  const consumerConn = await amqplib.connect(url);
  const cch = await consumerConn.createChannel();
  await cch.prefetch(500);
  let acked = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  await cch.consume('bench.bare', (msg) => {
    if (!msg) return;
    JSON.parse(msg.content.toString()); // the least any real consumer does
    cch.ack(msg);
    if (++acked === N) done();
  });
  const publisherConn = await amqplib.connect(url);
  const pch = await publisherConn.createConfirmChannel();
  const t0 = performance.now();
  await publishAll(pch, 'community.events', 'bench.bare', bodies);
  await finished;
  const rate = N / ((performance.now() - t0) / 1000);
  await Promise.all([consumerConn.close(), publisherConn.close()]);
  return rate;
}

/**
 * The quorum queues one notification.created lands in on the service's vhost: every queue of the
 * community topology bound to it on the events exchange (email-service.send, push-service.send),
 * plus the bench's own. The second bare hop can fan out to as many, so that both pipelines make the
 * broker store the same number of copies.
 */
const CREATED_FANOUT =
  COMMUNITY_TOPOLOGY.queues.filter((q) =>
    q.bindings?.some(
      (b) => b.exchange === 'community.events' && (b.routingKeys ?? []).includes('notification.created'),
    ),
  ).length + 1;

/**
 * The bare two-hop pipeline: publish with confirms → hop1 (quorum) → a consumer (prefetch 500)
 * that parses each message, publishes it on to hop2 on its own confirm channel and acks it once
 * that is confirmed → hop2 (quorum) → a consumer that parses and acks. Done when hop2 has all N.
 * `fanout`: the second publish lands in hop2 only (false), or in CREATED_FANOUT queues as
 * notification.created does (true; only hop2 is consumed, like email-service.send in the service
 * run, while the copies stay, as push-service.send's do there).
 */
async function bareTwoHop(url: string, fanout: boolean): Promise<number> {
  const bodies = Array.from({ length: N }, (_, i) => mentionBody(i, `user-${i % USERS}`, 'bare2'));
  const relayConn = await amqplib.connect(url);
  relayConn.on('error', (err) => console.error('bare two-hop relay connection:', err));
  const rin = await relayConn.createChannel();
  await rin.prefetch(500);
  const rout = await relayConn.createConfirmChannel();
  // Every source settled (after its confirm) before the channels close: a late ack on a closed
  // channel would throw.
  let settled = 0;
  let allSettled!: () => void;
  const relayed = new Promise<void>((r) => (allSettled = r));
  await rin.consume('bench.bare.hop1', (msg) => {
    if (!msg) return;
    JSON.parse(msg.content.toString());
    rout.publish(
      'community.events',
      fanout ? 'bench.bare.fanout' : 'bench.bare.hop2',
      msg.content,
      { ...msg.properties, persistent: true, userId: PUBLISHER_USER },
      (err) => {
        if (err) return; // the connection is going away (its error is reported below): the run fails
        rin.ack(msg);
        if (++settled === N) allSettled();
      },
    );
  });
  const sinkConn = await amqplib.connect(url);
  const sink = await sinkConn.createChannel();
  await sink.prefetch(500);
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  await sink.consume('bench.bare.hop2', (msg) => {
    if (!msg) return;
    JSON.parse(msg.content.toString());
    sink.ack(msg);
    if (++received === N) done();
  });
  const publisherConn = await amqplib.connect(url);
  const pch = await publisherConn.createConfirmChannel();
  const t0 = performance.now();
  await publishAll(pch, 'community.events', 'bench.bare.hop1', bodies);
  await finished;
  const rate = N / ((performance.now() - t0) / 1000);
  await relayed;
  await Promise.all([relayConn.close(), sinkConn.close(), publisherConn.close()]);
  return rate;
}

/** The bench's own queue of every notification.created on the service's vhost (quorum, as email-service's). */
const CREATED_QUEUE = 'bench.notification-created';

async function declareCreatedQueue(url: string): Promise<void> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  await ch.assertQueue(CREATED_QUEUE, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.bindQueue(CREATED_QUEUE, 'community.events', 'notification.created');
  await conn.close();
}

/**
 * Consumes CREATED_QUEUE, calling `onUser` with each notification.created's recipient (a
 * re-emission is counted again: the caller counts distinct recipients where it matters).
 */
async function consumeCreated(url: string, onUser: (userId: string) => void): Promise<() => Promise<void>> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  await ch.prefetch(500);
  await ch.consume(CREATED_QUEUE, (msg) => {
    if (!msg) return;
    onUser((JSON.parse(msg.content.toString()) as { data: { userId: string } }).data.userId);
    ch.ack(msg);
  });
  return () => conn.close();
}

async function count(pool: pg.Pool, sql: string): Promise<number> {
  return Number((await pool.query(sql)).rows[0].n);
}

/**
 * Service pipeline: publish N mentions with confirms; done when N notification.created (one per
 * notification) have been received from the broker, i.e. every row committed and announced.
 */
async function pipeline(url: string, pool: pg.Pool): Promise<number> {
  const bodies = Array.from({ length: N }, (_, i) => mentionBody(i, `user-${i % USERS}`, 'tp'));
  let announced = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const stop = await consumeCreated(url, (userId) => {
    if (userId.startsWith('user-') && ++announced === N) done();
  });
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  const t0 = performance.now();
  await publishAll(ch, 'community.events', 'user.mentioned', bodies);
  await finished;
  const rate = N / ((performance.now() - t0) / 1000);
  await Promise.all([conn.close(), stop()]);
  // The invariant the rate is about: every notification counted, and each announced once (no
  // redelivery happened in this phase, so no re-emission either).
  const rows = await count(pool, "SELECT count(*) AS n FROM notification_items WHERE user_id LIKE 'user-%'");
  const counters = await count(
    pool,
    "SELECT coalesce(sum(unread_count), 0) AS n FROM notification_counters WHERE user_id LIKE 'user-%'",
  );
  if (rows !== N || counters !== N || announced !== N)
    throw new Error(`invariant broken: rows ${rows}, counters ${counters}, notification.created ${announced}, of ${N}`);
  return rate;
}

/** Offered load at RATE/s for LATENCY_SECONDS; latency = publish → the commit's NOTIFY arrives. */
async function latency(
  url: string,
  databaseUrl: string,
  tag: string,
  seconds: number,
): Promise<{
  p50: number;
  p99: number;
  max: number;
  offered: number;
  samples: number;
  announced: { p50: number; p99: number; max: number };
}> {
  const total = RATE * seconds;
  const prefix = `${tag}-`;
  const bodies = Array.from({ length: total }, (_, i) => mentionBody(i, `${prefix}${i}`, tag));
  const sentAt = new Float64Array(total);
  const seenAt = new Float64Array(total);
  const announcedAt = new Float64Array(total);
  let seen = 0;
  let announced = 0;
  const stopCreated = await consumeCreated(url, (userId) => {
    if (!userId.startsWith(prefix)) return;
    const i = Number(userId.slice(prefix.length));
    if (announcedAt[i] === 0) {
      announcedAt[i] = performance.now();
      announced++;
    }
  });
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  listener.on('notification', (msg) => {
    const now = performance.now();
    for (const id of JSON.parse(msg.payload ?? '[]') as string[]) {
      if (!id.startsWith(prefix)) continue;
      const i = Number(id.slice(prefix.length));
      if (seenAt[i] === 0) {
        seenAt[i] = now;
        seen++;
      }
    }
  });
  await listener.query('LISTEN notification_inbox');
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  const offered = await publishPaced(ch, 'user.mentioned', bodies, sentAt);
  await waitUntil(() => seen === total, `only ${seen} of ${total} events became visible within 30 s`);
  await waitUntil(() => announced === total, `only ${announced} of ${total} events were announced within 30 s`);
  await Promise.all([conn.close(), listener.end(), stopCreated()]);
  return { ...percentiles(sentAt, seenAt), offered, samples: total, announced: percentiles(sentAt, announcedAt) };
}

/**
 * The baseline for the latency phase, in the same run: the same bodies at the same offered rate,
 * published the same way into a quorum queue on the bare vhost, and a bare amqplib consumer
 * (prefetch 100) that parses and acks each; latency = publish → delivered to that consumer. What
 * the broker and this machine cost before any service work.
 */
async function bareLatency(
  url: string,
): Promise<{ p50: number; p99: number; max: number; offered: number; samples: number }> {
  const total = RATE * LATENCY_SECONDS;
  const bodies = Array.from({ length: total }, (_, i) => mentionBody(i, `lat-${i}`, 'bare-lat'));
  const sentAt = new Float64Array(total);
  const seenAt = new Float64Array(total);
  let seen = 0;
  const consumerConn = await amqplib.connect(url);
  const cch = await consumerConn.createChannel();
  await cch.prefetch(100);
  await cch.consume('bench.bare.latency', (msg) => {
    if (!msg) return;
    const i = Number(msg.properties.messageId);
    JSON.parse(msg.content.toString());
    if (seenAt[i] === 0) {
      seenAt[i] = performance.now();
      seen++;
    }
    cch.ack(msg);
  });
  const publisherConn = await amqplib.connect(url);
  const pch = await publisherConn.createConfirmChannel();
  const offered = await publishPaced(pch, 'bench.bare.latency', bodies, sentAt);
  await waitUntil(() => seen === total, `only ${seen} of ${total} bare messages delivered within 30 s`);
  await Promise.all([consumerConn.close(), publisherConn.close()]);
  return { ...percentiles(sentAt, seenAt), offered, samples: total };
}

/**
 * Publishes `bodies` at RATE/s, paced every 5 ms to the schedule start + i/RATE (a slow tick is
 * caught up, not dropped), recording each publish time; messageId = the index. Returns the rate
 * achieved once every confirm arrived.
 */
async function publishPaced(
  ch: amqplib.ConfirmChannel,
  routingKey: string,
  bodies: Buffer[],
  sentAt: Float64Array,
): Promise<number> {
  const total = bodies.length;
  const t0 = performance.now();
  let next = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE));
      for (; next < due; next++) {
        sentAt[next] = performance.now();
        ch.publish('community.events', routingKey, bodies[next], {
          persistent: true,
          contentType: 'application/json',
          type: routingKey,
          messageId: String(next),
          userId: PUBLISHER_USER,
        });
      }
      if (next >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  const offered = total / ((performance.now() - t0) / 1000);
  await ch.waitForConfirms();
  return offered;
}

async function waitUntil(done: () => boolean, failure: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!done()) throw new Error(failure);
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0; // the process is gone
  }
}

/** CPU seconds of the service, the broker, every postgres process (whatever database) and this script. */
function cpuSnapshot(servicePid: number): Record<string, number> {
  const sum = (pids: number[]) => pids.reduce((a, p) => a + cpuSeconds(p), 0);
  return {
    service: cpuSeconds(servicePid),
    rabbitmq: sum(pidsOf('beam.smp')),
    postgres: sum(pidsOf('postgres')),
    bench: cpuSeconds(process.pid),
  };
}

/**
 * Runs `fn` and says where the CPU went meanwhile (percent of one core), how busy the machine was,
 * and the CPU milliseconds per event over all the processes (`events` of them) and per process.
 */
async function measured<T>(
  pid: number,
  fn: () => Promise<T>,
  events: number,
): Promise<{ result: T; usage: string; cpuMsPerEvent: number; perProcess: string }> {
  const [c0, m0, t0] = [cpuSnapshot(pid), machineCpu(), performance.now()];
  const result = await fn();
  const [c1, m1, seconds] = [cpuSnapshot(pid), machineCpu(), (performance.now() - t0) / 1000];
  const parts = Object.keys(c0).map((k) => `${k} ${(((c1[k] - c0[k]) / seconds) * 100).toFixed(0)}%`);
  const machine = ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100;
  const used = Object.keys(c0).reduce((a, k) => a + (c1[k] - c0[k]), 0);
  const perProcess = Object.keys(c0)
    .map((k) => `${k} ${(((c1[k] - c0[k]) * 1000) / events).toFixed(3)}`)
    .join(', ');
  return {
    result,
    usage: `CPU (% of one core): ${parts.join(', ')}; machine ${machine.toFixed(0)}% busy over both cores`,
    cpuMsPerEvent: (used * 1000) / events,
    perProcess,
  };
}

/** Waits until the machine is under QUIET_PERCENT busy over a second (at most 120 s); returns seconds waited. */
async function settle(): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const m0 = machineCpu();
    await new Promise((r) => setTimeout(r, 1000));
    const m1 = machineCpu();
    const busy = ((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100;
    if (busy < QUIET_PERCENT || performance.now() - t0 > 120_000) return (performance.now() - t0) / 1000;
  }
}

/**
 * Where the service's PostgreSQL connections spend a phase: pg_stat_activity sampled every 10 ms
 * for the backends whose application_name is the service's, each sample counted under its state and
 * wait event. "idle in transaction / Client:ClientRead" is a transaction waiting for the service's
 * next statement (a round trip and the event loop), "active" without a wait is executing; the rest
 * are PostgreSQL's own waits (locks, WAL flush at commit, ...). Plus, when the pg_stat_statements
 * extension is loaded (shared_preload_libraries), the time PostgreSQL spent executing each
 * statement of the service in the phase.
 */
async function postgresWaits(databaseUrl: string): Promise<{ stop: () => Promise<string[]> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let statements = false;
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
    statements = true;
  } catch {
    // not in shared_preload_libraries: the waits alone
  }
  const counts = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ key: string; n: number }>(
        `SELECT state || coalesce(' / ' || wait_event_type || ':' || wait_event, '') AS key, count(*)::int AS n
         FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'notification-service'
         GROUP BY 1`,
      );
      samples++;
      for (const r of rows) counts.set(r.key, (counts.get(r.key) ?? 0) + r.n);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      const lines = [...counts.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => `${k}: ${(n / Math.max(1, samples)).toFixed(2)} connections on average`);
      if (statements) {
        const { rows } = await client.query<{ query: string; calls: string; mean: number }>(
          `SELECT regexp_replace(left(query, 60), '\\s+', ' ', 'g') AS query, calls, mean_exec_time AS mean
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
           WHERE d.datname = current_database() ORDER BY total_exec_time DESC LIMIT 6`,
        );
        for (const r of rows)
          lines.push(`pg_stat_statements: ${r.calls} calls, ${r.mean.toFixed(2)} ms mean execution: ${r.query}`);
      } else lines.push('pg_stat_statements: not loaded (shared_preload_libraries), statement times not shown');
      await client.end();
      return lines;
    },
  };
}

/** Sums of a Prometheus series (all label sets) from the service's /metrics. */
async function scrape(port: number): Promise<(name: string, filter?: string) => number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return (name, filter = '') =>
    text
      .split('\n')
      .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(filter))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** What the consumer did between two scrapes: batches, their size and duration. */
function consumerDelta(a: (n: string, f?: string) => number, b: (n: string, f?: string) => number): string {
  const d = (n: string, f?: string) => b(n, f) - a(n, f);
  const q = 'queue="notification-service.critical"';
  const batches = d('messaging_batch_size_count', q);
  const size = d('messaging_batch_size_sum', q) / Math.max(1, batches);
  const tx =
    (d('messaging_handler_duration_seconds_sum', q) / Math.max(1, d('messaging_handler_duration_seconds_count', q))) *
    1000;
  return `${batches} batches, ${size.toFixed(0)} events/batch, batch transaction ${tx.toFixed(1)} ms avg`;
}

async function main(): Promise<void> {
  const [svcVhost, bareVhost, db] = await Promise.all([
    createTestVhost('bench-ns'),
    createTestVhost('bench-bare'),
    createTestDatabase('bench_ns'),
  ]);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  let child: ChildProcess | undefined;
  const peaks = { started: 0, throughput: 0, latency: 0 };
  let phase: keyof typeof peaks = 'started';
  let sampler: NodeJS.Timeout | undefined;
  try {
    const port = await freePort();
    // BENCH_NODE_ARGS: extra node flags for the service, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
    child = await startNotificationServiceProcess(
      { AMQP_URL: svcVhost.url, DATABASE_URL: db.url, PORT: String(port) },
      RUNNER,
      (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    );
    const pid = child.pid ?? 0;
    await declareCreatedQueue(svcVhost.url);
    sampler = setInterval(() => (peaks[phase] = Math.max(peaks[phase], rssMb(pid))), 100);
    await new Promise((r) => setTimeout(r, 1000));

    // Latency first, on a broker and database that have not just absorbed a burst: after the
    // throughput phase the broker digests ~3N messages for a while, and a bare consumer measured
    // then saw p99 110-200 ms against ~10-20 ms before (docs/BENCHMARKS.md).
    await declareBare(bareVhost.url);
    console.log(`latency baseline (bare amqplib): ${RATE} messages/s offered for ${LATENCY_SECONDS} s ...`);
    const bareLat = await bareLatency(bareVhost.url);
    console.log(`warm-up: ${RATE} events/s for ${WARMUP_SECONDS} s (not measured) ...`);
    phase = 'latency';
    await latency(svcVhost.url, db.url, 'warm', WARMUP_SECONDS);
    const settled = await settle();
    console.log(`latency: ${RATE} events/s offered for ${LATENCY_SECONDS} s ...`);
    const m2 = await scrape(port);
    const waits = await postgresWaits(db.url);
    const { result: lat, usage: usage2 } = await measured(
      pid,
      () => latency(svcVhost.url, db.url, 'lat', LATENCY_SECONDS),
      RATE * LATENCY_SECONDS,
    );
    const m3 = await scrape(port);
    const pgWaits = await waits.stop();

    console.log(`bare amqplib pipeline, one hop: ${N} messages ...`);
    const bareRate = await bare(bareVhost.url);
    console.log(`bare amqplib pipeline, two hops: ${N} messages ...`);
    const { result: bare2Rate, cpuMsPerEvent: bare2Cpu } = await measured(
      pid,
      () => bareTwoHop(bareVhost.url, false),
      N,
    );
    console.log(`bare amqplib pipeline, two hops, the second to ${CREATED_FANOUT} queues: ${N} messages ...`);
    const { result: bareFanRate, cpuMsPerEvent: bareFanCpu } = await measured(
      pid,
      () => bareTwoHop(bareVhost.url, true),
      N,
    );
    console.log(`notification-service pipeline: ${N} mentions to ${USERS} users ...`);
    phase = 'throughput';
    const m0 = await scrape(port);
    const {
      result: svcRate,
      usage: usage1,
      cpuMsPerEvent: svcCpu,
      perProcess,
    } = await measured(pid, () => pipeline(svcVhost.url, pool), N);
    const m1 = await scrape(port);

    console.log(`\nResults (one run; ${RUNNER} runner; 2 cores shared by broker, Postgres, service and this script)`);
    console.log(`  bare publish(confirm) -> quorum queue -> ack : ${bareRate.toFixed(0)} msg/s`);
    console.log(
      `  bare two hops (consume -> publish(confirm) -> ack -> consume): ${bare2Rate.toFixed(0)} msg/s, CPU ${bare2Cpu.toFixed(3)} ms/msg (all processes)`,
    );
    console.log(
      `  bare two hops, the second to ${CREATED_FANOUT} quorum queues like notification.created: ${bareFanRate.toFixed(0)} msg/s, CPU ${bareFanCpu.toFixed(3)} ms/msg`,
    );
    console.log(
      `  mention -> row + counter -> notification.created received: ${svcRate.toFixed(0)} events/s, CPU ${svcCpu.toFixed(3)} ms/event (all processes; target <= 0.3)`,
    );
    console.log(`    CPU ms/event by process: ${perProcess}`);
    console.log(`    consumer, throughput phase: ${consumerDelta(m0, m1)}`);
    console.log(`    ${usage1}`);
    console.log(
      `  ratio service / bare two hops                : ${(svcRate / bare2Rate).toFixed(2)} (target >= 0.6); / two hops with the same fan-out ${(svcRate / bareFanRate).toFixed(2)}; / one hop ${(svcRate / bareRate).toFixed(2)}`,
    );
    console.log(
      `  latency at ${lat.offered.toFixed(0)} events/s offered (${lat.samples} events), publish -> committed (inbox NOTIFY): p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, max ${lat.max.toFixed(1)} ms (target p99 <= bare p99 + 25)`,
    );
    console.log(
      `    publish -> notification.created received: p50 ${lat.announced.p50.toFixed(1)} ms, p99 ${lat.announced.p99.toFixed(1)} ms, max ${lat.announced.max.toFixed(1)} ms`,
    );
    console.log(
      `    after the warm-up, waited ${settled.toFixed(0)} s for a quiet machine (< ${QUIET_PERCENT}% busy over 1 s)`,
    );
    console.log(
      `    bare baseline, same rate and run: p50 ${bareLat.p50.toFixed(1)} ms, p99 ${bareLat.p99.toFixed(1)} ms, max ${bareLat.max.toFixed(1)} ms (publish -> delivered to a bare consumer)`,
    );
    console.log(`    consumer, latency phase: ${consumerDelta(m2, m3)}`);
    // prom-client resets its event-loop delay histogram at every scrape: m3's covers the phase. Its
    // samples are the time between two ticks of a 10 ms timer (eventLoopMonitoringPrecision), so a
    // loop that is never late reads 10 ms: the delay is what exceeds it.
    const lag = (q: string) => Math.max(0, m3(`nodejs_eventloop_lag_${q}_seconds`) * 1000 - 10).toFixed(1);
    console.log(
      `    service event-loop delay over the phase (beyond prom-client's 10 ms sampling tick): p50 ${lag('p50')} ms, p99 ${lag('p99')} ms, max ${lag('max')} ms`,
    );
    console.log(`    ${usage2}`);
    console.log(`    the service's PostgreSQL connections over the phase (sampled every 10 ms):`);
    for (const line of pgWaits) console.log(`      ${line}`);
    console.log(
      `  service RSS peak (${RUNNER} runner): started ${peaks.started.toFixed(0)} MB, latency ${peaks.latency.toFixed(0)} MB, throughput ${peaks.throughput.toFixed(0)} MB (target <= 250)`,
    );
  } finally {
    clearInterval(sampler);
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child?.once('exit', r));
    }
    await pool.end();
    await Promise.all([db.drop(), svcVhost.delete(), bareVhost.delete()]);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
