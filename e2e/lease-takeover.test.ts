import pg from 'pg';
import { Registry } from 'prom-client';
import { SMTPServer } from 'smtp-server';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { createMessaging, type Messaging } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { notificationCreated, userUpserted } from '../apps/email-service/test/support/harness';
import { evaluateStatus } from '../apps/reconciler/src';
import { findDeadHolderLeases } from '../apps/email-service/src';
import { appsEnv, freePort, startApp, stopApp, type App } from './harness';

/**
 * kill -9 of email-service with 16 emails mid-send (the provider has each whole message and has
 * not answered yet), then a restart. The restarted process must not wait out the dead one's
 * 2-minute leases: it takes each over as soon as the dead holder's heartbeat is stale, and the
 * mailbox gets each email exactly once (the dead process never got an answer, so nothing was
 * accepted twice). Asserted through the mechanism: the rows say `takeover = 'holder_dead'`, taken
 * before their lease expired, and the takeover counter.
 */
const EMAILS = 16;
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';

/** An SMTP server that holds every reply to DATA while `holding`: the sends stay in flight. */
function gatedSmtp() {
  const accepted: string[] = [];
  const held: Array<{ sessionId: string; messageId: string; reply: () => void }> = [];
  const closed = new Set<string>();
  let holding = true;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 50,
    onClose: (session) => closed.add(session.id),
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const messageId = /^Message-ID:\s*(.+)$/im.exec(Buffer.concat(chunks).toString('utf8'))?.[1]?.trim() ?? '';
        // A message counts as received when the server answers 250, as for a real provider.
        const reply = () => {
          if (closed.has(session.id)) return; // the sender died before the answer: not accepted
          accepted.push(messageId);
          callback();
        };
        if (holding) held.push({ sessionId: session.id, messageId, reply });
        else reply();
      });
    },
  });
  server.on('error', () => undefined);
  return {
    server,
    accepted,
    held,
    /** Every held send's connection is gone (the server saw the reset). */
    heldSendersGone: () => held.every((h) => closed.has(h.sessionId)),
    /** Answers what is held (to whoever is still connected) and everything after at once. */
    release() {
      holding = false;
      for (const h of held.splice(0)) h.reply();
    },
  };
}

let vhost: TestVhost;
let db: TestDatabase;
let smtp: ReturnType<typeof gatedSmtp>;
let smtpPort: number;
let producer: Messaging;
let observer: pg.Client;
const apps: App[] = [];

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('e2e-lease'), createTestDatabase('e2e_lease')]);
  smtp = gatedSmtp();
  smtpPort = await freePort();
  await new Promise<void>((r) => smtp.server.listen(smtpPort, '127.0.0.1', r));
  producer = createMessaging({
    url: vhost.url,
    service: 'test-producer',
    topology: COMMUNITY_TOPOLOGY,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
  await producer.start();
  observer = new pg.Client({ connectionString: db.url });
  await observer.connect();
});

afterAll(async () => {
  for (const a of apps) await stopApp(a, 'SIGKILL').catch(() => undefined);
  await observer?.end();
  await producer?.stop();
  await new Promise<void>((r) => (smtp ? smtp.server.close(() => r()) : r()));
  await Promise.all([vhost?.delete(), db?.drop()]);
});

async function startEmail(): Promise<App> {
  const port = await freePort();
  const app = await startApp('email-service', port, {
    ...appsEnv({ secret: SECRET, smtpPort, notificationsPort: await freePort(), emailPort: port }),
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    EMAIL_CONSUMER_CONCURRENCY: String(EMAILS),
    SMTP_POOL_SIZE: String(EMAILS),
    EMAIL_LEASE_MS: '120000', // the 2-minute lease of the incident: never waited out here
    EMAIL_HEARTBEAT_INTERVAL_MS: '300',
    EMAIL_HOLDER_DEAD_AFTER_MS: '1500',
    DIGEST_FLUSH_INTERVAL_MS: '3600000',
  });
  apps.push(app);
  return app;
}

const rows = async () =>
  (
    await observer.query<{
      state: string;
      takeover: string | null;
      lease_until: Date | null;
      updated_at: Date;
      attempts: number;
      holder: string | null;
    }>(
      `SELECT state, takeover, lease_until, updated_at, attempts, lease_holder::text AS holder FROM email_deliveries WHERE channel = 'immediate'`,
    )
  ).rows;

it('takes over the leases of a killed process at once, and every email arrives exactly once', async () => {
  const first = await startEmail();
  await producer.publisher.publish(userUpserted('ada', 'ada@example.test', 'Ada'));
  for (let i = 0; i < EMAILS; i++)
    await producer.publisher.publish(notificationCreated({ userId: 'ada', excerpt: `message ${i}` }));
  // Every email is mid-send: its whole message is at the provider, the answer held back.
  await eventually('16 sends in flight', () => smtp.held.length === EMAILS, 60_000, 50);
  const firstHolder = (await rows())[0].holder;
  expect((await rows()).every((r) => r.state === 'sending' && r.holder === firstHolder)).toBe(true);

  expect(await stopApp(first, 'SIGKILL')).toBe('SIGKILL');
  // The server notices the resets, then answers nobody: none of the 16 was accepted. (Answering
  // before it noticed would be the documented duplicate window: the provider has accepted, the
  // dead process never recorded it.)
  await eventually('the dead sessions closed', () => smtp.heldSendersGone(), 10_000, 20);
  smtp.release();

  // Before a restart: the reconciler's stale-leases line says what waits, and until when.
  const dead = await eventually(
    'the dead holder is seen as dead',
    async () => {
      const d = await findDeadHolderLeases(observer as unknown as pg.Pool);
      return d.count === EMAILS ? d : undefined;
    },
    30_000,
    100,
  );
  const leaseEnd = Math.max(...(await rows()).map((r) => r.lease_until?.getTime() ?? 0));
  expect(dead.until?.getTime()).toBe(leaseEnd);
  const line = evaluateStatus({
    now: new Date(),
    startedAt: new Date(0),
    workQueues: [],
    queues: [],
    watchdog: [],
    lastRecount: null,
    lastRuns: [],
    jobIntervalsMs: {},
    breakers: [],
    stuck: { outboxUnsent: 0, outboxLagSeconds: 0, outboxProducers: [], emailLeasesExpired: 0, fanoutChunks: 0 },
    deadHolderLeases: dead,
    thresholds: { fanoutAfterMs: 1, backlogMax: 1, oldestMessageMaxMs: 1, outboxLagMaxMs: 1 },
  }).checks.find((c) => c.name === 'stale-leases');
  expect(line).toMatchObject({
    ok: false,
    detail: `16 messages wait for leases of a dead process until ${new Date(leaseEnd).toISOString().slice(11, 16)} UTC (a live email-service takes each over at its next delivery)`,
  });

  const second = await startEmail();
  await eventually('every email accepted', () => new Set(smtp.accepted).size === EMAILS, 60_000, 100);
  await eventually('every row sent', async () => (await rows()).every((r) => r.state === 'sent'), 30_000, 100);

  // Exactly once: 16 distinct Message-IDs, none accepted twice.
  expect(smtp.accepted).toHaveLength(EMAILS);
  // Through the mechanism, not the clock: each row was taken from the dead holder, before its lease
  // would have expired (a lease_expired takeover would say so), and counted.
  const after = await rows();
  expect(after.map((r) => r.takeover)).toEqual(Array(EMAILS).fill('holder_dead'));
  expect(after.every((r) => r.updated_at.getTime() < leaseEnd && r.attempts === 2 && r.holder !== firstHolder)).toBe(
    true,
  );
  const metrics = await (await fetch(`${second.url}/metrics`)).text();
  expect(metrics).toMatch(new RegExp(`^email_lease_takeovers_total\\{reason="holder_dead"[^}]*\\} ${EMAILS}$`, 'm'));
  // The restarted process said it, in its log and /readyz, when it found them (before taking over).
  expect(second.output.join('')).toMatch(
    /16 messages wait for leases of a dead process until \d\d:\d\d UTC; each is taken over at its next delivery/,
  );
  // /readyz's figure is refreshed by the heartbeat (every 300 ms here): the tick after the last takeover says 0.
  await eventually(
    '/readyz says nothing waits for a dead process any more',
    async () => {
      const ready = (await (await fetch(`${second.url}/readyz`)).json()) as {
        details: { leases: { waitingOnDeadHolders: { count: number } } };
      };
      return ready.details.leases.waitingOnDeadHolders.count === 0;
    },
    30_000,
    100,
  );
  await stopApp(second);
}, 180_000);
