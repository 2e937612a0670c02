/**
 * npm run bench:runtime — messages/s through the consumer runtime (no-op handler) beside a bare
 * amqplib consumer on the same kind of quorum queue, same prefetch, same broker, same run.
 *
 * Both consume a pre-filled backlog of identical valid 300-byte-ish envelopes, acking each message.
 * Rounds alternate (bare, runtime, bare, runtime, …) so drift on a shared machine hits both; the
 * median of each is reported. Env: BENCH_MESSAGES (default 30000), BENCH_ROUNDS (3), BENCH_PREFETCH (100).
 */
import amqplib from 'amqplib';
import { Registry } from 'prom-client';
import pino from 'pino';
import { buildEvent, validateOrThrow } from '@community/contracts';
import { createMessaging, type Topology } from '@community/messaging';
import { createTestVhost, median } from '@community/testing';

const N = Number(process.env.BENCH_MESSAGES ?? 30_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PREFETCH = Number(process.env.BENCH_PREFETCH ?? 100);

const topology: Topology = {
  exchanges: [{ name: 'community.events', type: 'topic' }],
  queues: [
    {
      name: 'bench.bare',
      bindings: [{ exchange: 'community.events', routingKeys: ['bench.bare'] }],
      retryDelaysMs: [1000],
    },
    {
      name: 'bench.runtime',
      bindings: [{ exchange: 'community.events', routingKeys: ['bench.runtime'] }],
      retryDelaysMs: [1000],
    },
  ],
};

function body(i: number): Buffer {
  const e = buildEvent(
    'user.mentioned',
    {
      commentId: `comment-${i}`,
      postId: 'post-42',
      actorId: 'user-1',
      mentionedUserId: 'user-2',
      excerpt: 'x'.repeat(80),
    },
    { producer: 'bench' },
  );
  return Buffer.from(JSON.stringify(e));
}

async function fill(url: string, queue: string): Promise<void> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  for (let i = 0; i < N; i++) {
    const ok = ch.publish('', queue, body(i), {
      persistent: true,
      contentType: 'application/json',
      messageId: `m-${i}`,
      type: 'user.mentioned',
    });
    if (!ok) await new Promise((r) => ch.once('drain', r));
    if (i % 2000 === 1999) await ch.waitForConfirms();
  }
  await ch.waitForConfirms();
  await conn.close();
}

async function bare(url: string): Promise<number> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  await ch.prefetch(PREFETCH);
  let n = 0;
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    void ch.consume('bench.bare', (msg) => {
      if (!msg) return;
      JSON.parse(msg.content.toString()); // the least any real consumer does
      ch.ack(msg);
      if (++n === N) resolve();
    });
  });
  const rate = N / ((performance.now() - t0) / 1000);
  await conn.close();
  return rate;
}

async function runtime(url: string): Promise<number> {
  const messaging = createMessaging({
    url,
    service: 'bench',
    topology,
    logger: pino({ level: 'warn' }),
    registry: new Registry(),
    classifiers: [],
  });
  let n = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  let t0 = 0;
  messaging.consume({
    queue: 'bench.runtime',
    name: 'noop',
    // The contract's validator, as every service runs it: the comparison includes validation.
    validate: validateOrThrow,
    prefetch: PREFETCH,
    handle: async () => {
      if (n === 0) t0 = performance.now();
      if (++n === N) done();
      return 'processed';
    },
  });
  const start = performance.now();
  await messaging.start();
  await finished;
  // the first delivery's time is the fairest start: the bare consumer starts its clock at consume()
  const rate = N / ((performance.now() - Math.min(t0, start + 1e9)) / 1000);
  await messaging.stop(5000);
  return rate;
}

async function main() {
  const vhost = await createTestVhost('bench-runtime');
  try {
    // declare the queues (and policies) once
    const setup = createMessaging({
      url: vhost.url,
      service: 'bench-setup',
      topology,
      logger: pino({ level: 'warn' }),
      registry: new Registry(),
      classifiers: [],
    });
    await setup.start();
    await setup.stop();
    const bares: number[] = [];
    const runtimes: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      await fill(vhost.url, 'bench.bare');
      bares.push(await bare(vhost.url));
      await fill(vhost.url, 'bench.runtime');
      runtimes.push(await runtime(vhost.url));
      console.log(`round ${r}: bare ${bares.at(-1)!.toFixed(0)} msg/s, runtime ${runtimes.at(-1)!.toFixed(0)} msg/s`);
    }
    const b = median(bares);
    const rt = median(runtimes);
    console.log(`\n${N} messages x ${ROUNDS} rounds, quorum queue, prefetch ${PREFETCH}, no-op handler`);
    console.log(`bare amqplib consumer : ${b.toFixed(0)} msg/s (median)`);
    console.log(`consumer runtime      : ${rt.toFixed(0)} msg/s (median)`);
    console.log(`ratio                 : ${(rt / b).toFixed(2)} (target >= 0.80)`);
  } finally {
    await vhost.delete();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
