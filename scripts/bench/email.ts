/**
 * npm run bench:email — emails/s through email-service's sender path (template → Message-ID → rate
 * limiter → breaker → pooled nodemailer transport) beside the raw nodemailer send rate, both to the
 * same local SMTP sink in the same run; then the configured rate limit measured at a few rates;
 * then (BENCH_PIPELINE=1, the default) the whole service: RabbitMQ → handler → ledger → SMTP.
 *
 * The sink is smtp-server accepting everything, run by this same script in a forked child process
 * (the provider is another machine in production; in-process, it would take half of the CPU the
 * client is measured on). Raw and service rounds alternate and the median of each is reported.
 *
 * Env: BENCH_EMAILS (3000), BENCH_ROUNDS (3), BENCH_POOL (5 = SMTP_POOL_SIZE default),
 * BENCH_CONCURRENCY (64 sends in flight), BENCH_RATES ("50,200,400"), BENCH_RATE_SECONDS (5),
 * BENCH_PIPELINE (1).
 */
import { fork, type ChildProcess } from 'node:child_process';
import nodemailer from 'nodemailer';
import { Registry } from 'prom-client';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { createMessaging } from '@community/messaging';
import { buildEvent, COMMUNITY_TOPOLOGY } from '@community/contracts';
import { createTestDatabase, createTestVhost, median } from '@community/testing';
// The app's public entry only: the sender path below is the one the service builds for itself.
import {
  createComposer,
  createEmailService,
  createSmtpStack,
  emailMetrics,
  loadEmailConfig,
  UnsubscribeTokens,
  type Sender,
} from '../../apps/email-service/src';

const N = Number(process.env.BENCH_EMAILS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = Number(process.env.BENCH_POOL ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const RATES = (process.env.BENCH_RATES ?? '50,200,400').split(',').map(Number);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 5);
const PIPELINE = process.env.BENCH_PIPELINE !== '0';

// ---- the sink (child process) -------------------------------------------------------------------
function runSink(): void {
  let received = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    maxClients: 1000,
    onData(stream, _session, callback) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        received += 1;
        callback();
      });
    },
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.server.address();
    process.send?.({ port: typeof address === 'object' && address ? address.port : 0 });
  });
  // Dies with the benchmark, whatever way that ends.
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'count') process.send?.({ received });
  });
}

function startSink(): Promise<{ child: ChildProcess; port: number; count(): Promise<number> }> {
  const child = fork(__filename, [], {
    env: { ...process.env, BENCH_ROLE: 'sink' },
    execArgv: ['-r', '@swc-node/register'],
  });
  return new Promise((resolve) => {
    child.once('message', (m: { port: number }) =>
      resolve({
        child,
        port: m.port,
        count: () =>
          new Promise((r) => {
            child.once('message', (c: { received: number }) => r(c.received));
            child.send({ cmd: 'count' });
          }),
      }),
    );
  });
}

// ---- what is measured ---------------------------------------------------------------------------
/** email-service's configuration for a sink on `port` (defaults otherwise, as in production). */
const benchConfig = (port: number, env: Record<string, string> = {}) =>
  loadEmailConfig({ SMTP_URL: `smtp://127.0.0.1:${port}`, SMTP_POOL_SIZE: String(POOL), LOG_LEVEL: 'silent', ...env });
const composer = createComposer(benchConfig(0), new UnsubscribeTokens('bench-secret-bench-secret-bench-secret'));
const recipient = { userId: 'u-42', email: 'reader@example.test', displayName: 'Ada Reader', locale: null };

/** The service's own sender stack (rate limiter → breaker → pooled transport), built from its configuration. */
function serviceSender(port: number, ratePerSecond: number): Sender {
  const config = benchConfig(port, { SMTP_RATE_PER_SECOND: String(ratePerSecond), SMTP_RATE_BURST: '1' });
  return createSmtpStack(config, { logger: pino({ level: 'silent' }), metrics: emailMetrics(new Registry()) }).sender;
}

/** Runs `count` jobs with `CONCURRENCY` in flight; returns the completion time of each. */
async function drive(count: number, job: (i: number) => Promise<unknown>): Promise<number[]> {
  const done: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
      while (next < count) {
        await job(next++);
        done.push(performance.now());
      }
    }),
  );
  return done;
}

async function rawNodemailer(port: number, n: number): Promise<number> {
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    maxConnections: POOL,
    maxMessages: Infinity,
  });
  const mail = composer.notification(
    recipient,
    { type: 'mention', notificationId: 'n-1', actorName: 'Grace', resourceType: 'comment', excerpt: 'x'.repeat(200) },
    'k',
  );
  const t0 = performance.now();
  await drive(n, () =>
    transport.sendMail({
      from: 'Community <notifications@community.local>',
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
    }),
  );
  const rate = n / ((performance.now() - t0) / 1000);
  transport.close();
  return rate;
}

async function servicePath(port: number, n: number, ratePerSecond: number): Promise<{ rate: number; done: number[] }> {
  const sender = serviceSender(port, ratePerSecond);
  // Rendering is part of the path: template, escaping, unsubscribe token, Message-ID.
  const render = (i: number) =>
    composer.notification(
      recipient,
      {
        type: 'mention',
        notificationId: `n-${i}`,
        actorName: 'Grace <Hopper>',
        resourceType: 'comment',
        excerpt: 'x'.repeat(200),
      },
      `mention:c-${i}:u-42`,
    );
  // One send first, so the timed run does not include opening a pooled connection.
  await sender.send(render(-1), 'immediate');
  const t0 = performance.now();
  const done = await drive(n, (i) => sender.send(render(i), 'immediate'));
  const rate = n / ((performance.now() - t0) / 1000);
  sender.close();
  return { rate, done };
}

/**
 * The whole service on a private vhost and database: a backlog of notification.created is published
 * first, then the service starts and the clock runs until the sink has every email.
 */
async function runPipeline(port: number, emails: number, received: () => Promise<number>): Promise<number> {
  const silent = pino({ level: 'silent' });
  const [vhost, db] = await Promise.all([createTestVhost('bench-email'), createTestDatabase('bench_email')]);
  try {
    const producer = createMessaging({
      url: vhost.url,
      service: 'bench-producer',
      topology: COMMUNITY_TOPOLOGY,
      logger: silent,
      registry: new Registry(),
      classifiers: [],
    });
    await producer.start();
    for (let i = 0; i < emails; i++) {
      const data = {
        notificationId: `n-${i}`,
        userId: 'u-42',
        type: 'mention' as const,
        idempotencyKey: `mention:c-${i}:u-42`,
        actorId: 'u-7',
        resourceType: 'comment',
        resourceId: `c-${i}`,
        emailChannel: 'immediate' as const,
        excerpt: 'x'.repeat(200),
      };
      await producer.publisher.publish(buildEvent('notification.created', data, { producer: 'bench' }));
    }
    await producer.stop();
    const config = benchConfig(port, {
      AMQP_URL: vhost.url,
      DATABASE_URL: db.url,
      PORT: '0',
      SMTP_RATE_PER_SECOND: '0',
      EMAIL_CONSUMER_CONCURRENCY: String(CONCURRENCY),
    });
    const service = createEmailService(config, { logger: silent, registry: new Registry(), runTicker: false });
    await service.pool.query(
      `INSERT INTO email_users (user_id, email, display_name, source_event_id, source_occurred_at) VALUES ('u-42', 'reader@example.test', 'Ada Reader', 'e1', now()), ('u-7', 'grace@example.test', 'Grace', 'e2', now())`,
    );
    const before = await received();
    const t0 = performance.now();
    await service.start();
    while ((await received()) - before < emails) await new Promise((r) => setTimeout(r, 20));
    const rate = emails / ((performance.now() - t0) / 1000);
    await service.stop();
    await service.app.close();
    return rate;
  } finally {
    await vhost.delete();
    await db.drop();
  }
}

const fmt = (x: number) => x.toFixed(0).padStart(6);

async function main(): Promise<void> {
  const sink = await startSink();
  try {
    await measure(sink);
  } finally {
    sink.child.kill();
  }
}

async function measure(sink: { port: number; count(): Promise<number> }): Promise<void> {
  console.log(
    `email bench: ${N} emails per round, ${ROUNDS} rounds, pool ${POOL} connections, ${CONCURRENCY} sends in flight; sink: smtp-server in a child process`,
  );
  await rawNodemailer(sink.port, 300); // warm-up (JIT, connections)
  await servicePath(sink.port, 300, 0);

  const raw: number[] = [];
  const svc: number[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    raw.push(await rawNodemailer(sink.port, N));
    svc.push((await servicePath(sink.port, N, 0)).rate);
    console.log(`  round ${r}: raw nodemailer ${fmt(raw[r - 1])}/s   service sender path ${fmt(svc[r - 1])}/s`);
  }
  if (ROUNDS > 0)
    console.log(
      `unthrottled, median: raw nodemailer ${fmt(median(raw))} emails/s | service sender path ${fmt(median(svc))} emails/s (${((median(svc) / median(raw)) * 100).toFixed(0)} % of raw)`,
    );

  console.log(`rate limit (SMTP_RATE_PER_SECOND), ${RATE_SECONDS} s each, measured from first to last completed send:`);
  for (const rate of RATES) {
    const n = rate * RATE_SECONDS + 1;
    const { done } = await servicePath(sink.port, n, rate);
    const achieved = (n - 1) / ((done[done.length - 1] - done[0]) / 1000);
    const deviation = (achieved / rate - 1) * 100;
    console.log(
      `  configured ${fmt(rate)}/s  achieved ${achieved.toFixed(1).padStart(7)}/s  (${deviation >= 0 ? '+' : ''}${deviation.toFixed(2)} %) ${Math.abs(deviation) <= 5 ? 'within ±5 %' : 'OUTSIDE ±5 %'}`,
    );
  }

  if (PIPELINE) {
    const emails = Math.min(N, 2000);
    const rate = await runPipeline(sink.port, emails, () => sink.count());
    console.log(
      `whole service (RabbitMQ → handler → ledger in Postgres → SMTP), ${emails} emails, consumer concurrency ${CONCURRENCY}: ${fmt(rate)} emails/s`,
    );
  }
}

if (process.env.BENCH_ROLE === 'sink') runSink();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
