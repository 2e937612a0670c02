import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { classifyPgError } from '@community/db';
import { createMessaging, type Messaging } from '@community/messaging';
import { eventually, testLogger } from '@community/testing';
import { createInfra, notificationCreated, userUpserted, type Infra } from './support/harness';
import { TestSmtp } from './support/smtp';

// kill -9 of the real service process (main.ts, COMMUNITY_TOPOLOGY) in the middle of a send.
const MAIN = path.resolve(__dirname, '../src/main.ts');
const ROOT = path.resolve(__dirname, '../../..');
const EMAILS = 40;
const KILL_AT = 10;

let infra: Infra;
let smtp: TestSmtp;
let producer: Messaging;
const children: ChildProcess[] = [];

function startService(): { proc: ChildProcess; started: Promise<void> } {
  const proc = spawn(process.execPath, ['-r', '@swc-node/register', MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      AMQP_URL: infra.vhost.url,
      DATABASE_URL: infra.db.url,
      SMTP_URL: smtp.url,
      PORT: '0',
      LOG_LEVEL: 'info',
      SMTP_RATE_PER_SECOND: '0',
      SMTP_CONNECTION_TIMEOUT_MS: '500',
      SMTP_SOCKET_TIMEOUT_MS: '1000',
      EMAIL_LEASE_MS: '2500',
      EMAIL_CONSUMER_CONCURRENCY: '4',
      DIGEST_FLUSH_INTERVAL_MS: '3600000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(proc);
  const started = new Promise<void>((resolve, reject) => {
    let buffered = '';
    proc.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (buffered.includes('"msg":"email-service started"')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`email-service exited with ${code} before starting`)));
  });
  return { proc, started };
}

beforeAll(async () => {
  infra = await createInfra('email_crash');
  smtp = await new TestSmtp().start();
  producer = createMessaging({
    url: infra.vhost.url,
    service: 'test-producer',
    topology: COMMUNITY_TOPOLOGY,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [classifyPgError],
  });
  await producer.start();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await producer?.stop();
  await smtp?.close();
  await infra?.close();
});

it('sends one email per key across a kill -9 mid-send; the crash window re-sends with the same Message-ID', async () => {
  const first = startService();
  await first.started;
  await producer.publisher.publish(userUpserted('alice', 'alice@example.test', 'Alice'));

  // When the KILL_AT-th message's DATA is complete, the service is killed, and that message's 250
  // (and that of any other whose DATA completes meanwhile) waits until the process is gone: exactly
  // the crash window (the provider has the email, the ledger still says 'sending').
  let killedAfter = -1;
  let exited: Promise<void> | undefined;
  smtp.behaviour.onMessage = async () => {
    if (smtp.received.length === KILL_AT && killedAfter < 0) {
      killedAfter = smtp.received.length;
      exited = new Promise<void>((r) =>
        first.proc.exitCode !== null || first.proc.signalCode !== null ? r() : first.proc.once('exit', () => r()),
      );
      first.proc.kill('SIGKILL');
    }
    if (exited && smtp.received.length >= KILL_AT) await exited;
    return undefined;
  };
  const events = Array.from({ length: EMAILS }, (_, i) =>
    notificationCreated({ userId: 'alice', excerpt: `message ${i}` }),
  );
  for (const e of events) await producer.publisher.publish(e);

  await eventually('the kill', () => killedAfter > 0, 20_000);
  await new Promise<void>((r) =>
    first.proc.exitCode !== null || first.proc.signalCode !== null ? r() : first.proc.once('exit', () => r()),
  );
  const beforeRestart = new Set(smtp.messageIds());

  const second = startService();
  await second.started;
  await eventually('every key delivered', () => new Set(smtp.messageIds()).size === EMAILS, 25_000);
  // A send happens only under a lease ('sending'); once every row is 'sent', no copy is left in
  // flight, so the count below is final.
  const { Client } = await import('pg');
  const db = new Client({ connectionString: infra.db.url });
  await db.connect();
  await eventually('every ledger row sent', async () => {
    const { rows } = await db.query(`SELECT state, count(*)::int AS n FROM email_deliveries GROUP BY state`);
    return rows.length === 1 && rows[0].state === 'sent' && rows[0].n === EMAILS;
  });
  await db.end();

  const ids = smtp.messageIds();
  const distinct = new Set(ids);
  expect(distinct.size).toBe(EMAILS); // one email per key, as a receiver deduplicating by Message-ID sees it
  const duplicates = ids.filter((id, i) => ids.indexOf(id) !== i);
  // Re-sent copies exist only for messages whose DATA the server had completed when the process
  // died (at most the 4 in flight), each with the Message-ID of its first copy.
  expect(duplicates.length).toBeGreaterThanOrEqual(1);
  expect(duplicates.length).toBeLessThanOrEqual(4);
  for (const id of duplicates) expect(beforeRestart.has(id)).toBe(true);

  second.proc.kill('SIGTERM');
  await new Promise((r) => second.proc.once('exit', r));
});
