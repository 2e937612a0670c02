// The reconciler against the services it repairs and explains, all in this process on one test
// database and one vhost (each built by its own builder, as production runs them): a producer's
// outbox and relay, notification-service, email-service with an SMTP sink, and the reconciler.
import { Registry } from 'prom-client';
import type { Pool } from 'pg';
import { buildEvent, COMMUNITY_TOPOLOGY, type AnyEvent, type EventData, type EventType } from '@community/contracts';
import { withTransaction } from '@community/db';
import { managementRequest } from '@community/messaging';
import { createRelay, enqueueEvents, type OutboxRelay } from '@community/outbox';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  testOperators,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createEmailService, loadEmailConfig } from '../apps/email-service/src';
import {
  createNotificationService,
  loadNotificationConfig,
  type NotificationService,
} from '../apps/notification-service/src';
import { createReconcilerService, loadReconcilerConfig, type ReconcilerService } from '../apps/reconciler/src';
import { main as ops } from '../scripts/ops/ops';
import { adminJwt, jwt, startSmtpSink } from './harness';

const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
const OPERATORS = testOperators(['volunteer']);
const PRODUCER = 'community-api';
// The reconciler watches the queues that have a consumer in this test (feed-service and push-service do not run here).
const WATCHED = {
  ...COMMUNITY_TOPOLOGY,
  queues: COMMUNITY_TOPOLOGY.queues.filter((q) => !/^(feed|push)-service\./.test(q.name)),
};

let db: TestDatabase;
let vhost: TestVhost;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let ns: NotificationService;
let es: ReturnType<typeof createEmailService>;
let rc: ReconcilerService;
let relay: OutboxRelay;
let pool: Pool;
let rcUrl: string;

/** `npm run ops -- <args>` in this process, against the reconciler listening on a port. */
async function runOps(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
  // The volunteer's own key: the reconciler records the operator its ADMIN_KEYS binds to the kid.
  const code = await ops(args, io, { RECONCILER_URL: rcUrl, ...OPERATORS.cliEnv('volunteer') });
  return { code, out: lines.join('\n') };
}

const admin = () => ({ authorization: `Bearer ${adminJwt('reconciler', OPERATORS.key('volunteer'))}` });

beforeAll(async () => {
  [db, vhost, smtp] = await Promise.all([
    createTestDatabase('e2e_reconciler'),
    createTestVhost('e2e-reconciler'),
    startSmtpSink(),
  ]);
  const common = {
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SHUTDOWN_TIMEOUT_MS: '3000',
  };
  // A long batch deadline: the poisoned-queue case holds a batch on a lock for longer than the default 10 s.
  ns = createNotificationService(loadNotificationConfig({ ...common, CONSUMER_BATCH_SIZE: '20' }), {
    logger: testLogger('ns'),
    registry: new Registry(),
    batchTimeoutMs: 60_000,
  });
  es = createEmailService(
    loadEmailConfig({
      ...common,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      SMTP_CONNECTION_TIMEOUT_MS: '1000',
      SMTP_SOCKET_TIMEOUT_MS: '2000',
      EMAIL_LEASE_MS: '5000',
    }),
    { logger: testLogger('es'), registry: new Registry(), runTicker: false },
  );
  // The breaker check reads email-service's real /metrics.
  await es.app.listen({ port: 0, host: '127.0.0.1' });
  const esPort = (es.app.server.address() as { port: number }).port;
  rc = createReconcilerService(
    loadReconcilerConfig({
      ...common,
      COUNTER_BATCH_SIZE: '5',
      BREAKER_METRICS_URLS: `http://127.0.0.1:${esPort}/metrics`,
      WATCHDOG_SAMPLES: '2',
    }),
    {
      logger: testLogger('rc'),
      registry: new Registry(),
      topology: WATCHED,
      runScheduler: false,
    },
  );
  pool = rc.pool;
  await Promise.all([ns.start(), es.start(), rc.start()]);
  rcUrl = await rc.app.listen({ port: 0, host: '127.0.0.1' });
  const messaging = rc.messaging;
  if (!messaging) throw new Error('the reconciler was built without messaging');
  relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger: testLogger('relay'),
    registry: new Registry(),
    databaseUrl: db.url,
    pollIntervalMs: 100,
  });
  await relay.start();
});

afterAll(async () => {
  await relay?.stop();
  for (const s of [rc, es, ns]) {
    await s?.stop();
    await s?.app.close();
  }
  await smtp?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

/** As the community API does: the events go into its outbox in a transaction, its relay publishes them. */
async function produce(...events: AnyEvent[]): Promise<void> {
  await withTransaction(pool, (tx) =>
    enqueueEvents(
      tx,
      PRODUCER,
      events.map((event) => ({ event, aggregateId: event.id })),
    ),
  );
}
const ev = <T extends EventType>(type: T, data: EventData<T>) => buildEvent(type, data, { producer: PRODUCER });
const mention = (commentId: string, actorId: string, mentionedUserId: string) =>
  ev('user.mentioned', { commentId, postId: 'p1', actorId, mentionedUserId, excerpt: `@${mentionedUserId} hi` });
const drift = async () =>
  (
    await pool.query<{ user_id: string }>(
      `SELECT c.user_id FROM notification_counters c
        WHERE c.unread_count <> (SELECT count(*) FROM notification_items n WHERE n.user_id = c.user_id AND n.in_app AND n.item_head AND n.item_unread)`,
    )
  ).rows.map((r) => r.user_id);
const unread = async (users: string[]) =>
  Number(
    (
      await pool.query(
        'SELECT coalesce(sum(unread_count), 0) AS n FROM notification_counters WHERE user_id = ANY($1)',
        [users],
      )
    ).rows[0].n,
  );

describe('unread counter repair under live traffic', () => {
  const users = Array.from({ length: 12 }, (_, i) => `live-${String(i).padStart(2, '0')}`);

  it('repairs injected drift exactly, with one audit row per drifted user, while notifications and reads keep changing the same users', async () => {
    // Every user has a few unread notifications, counted exactly by the live path.
    await produce(...users.flatMap((u, i) => [mention(`c0-${i}`, 'actor', u), mention(`c1-${i}`, 'actor', u)]));
    await eventually('first notifications counted', async () => (await unread(users)) === 24, 20_000);

    // Drift: +5 on every other user, behind the live path's back.
    const drifted = users.filter((_, i) => i % 2 === 0);
    await pool.query('UPDATE notification_counters SET unread_count = unread_count + 5 WHERE user_id = ANY($1)', [
      drifted,
    ]);

    // Live traffic on the same users while sweeps run back to back: new mentions, and reads
    // through the inbox API, until 20 rounds are done.
    let trafficDone = false;
    const traffic = (async () => {
      for (let round = 0; round < 20; round++) {
        await produce(...users.map((u, i) => mention(`live-${round}-${i}`, 'actor', u)));
        const u = users[round % users.length];
        const token = jwt(JWT_SECRET, { sub: u });
        const list = await ns.app.inject({
          method: 'GET',
          url: `/v1/users/${u}/notifications?limit=1`,
          headers: { authorization: `Bearer ${token}` },
        });
        const first = list.json().items?.[0];
        if (first)
          await ns.app.inject({
            method: 'POST',
            url: `/v1/users/${u}/notifications/${first.id}/read`,
            headers: { authorization: `Bearer ${token}` },
            payload: { version: first.version },
          });
      }
    })().finally(() => (trafficDone = true));
    const sweeps: unknown[] = [];
    while (!trafficDone || sweeps.length < 2)
      sweeps.push(await rc.scheduler.runOnce('counters.sweep', { force: true }));
    await traffic;
    // Let the last events land, then one more sweep: nothing left to repair.
    await eventually(
      'traffic drained',
      async () =>
        (await vhost.depth('notification-service.standard')).total +
          (await vhost.depth('notification-service.critical')).total ===
        0,
      20_000,
    );
    await eventually(
      'outbox published',
      async () =>
        (await pool.query("SELECT 1 FROM outbox_messages WHERE sent_at IS NULL AND producer = 'community-api'"))
          .rowCount === 0,
      20_000,
    );
    await eventually('consumed', async () => (await vhost.depth('notification-service.critical')).total === 0, 20_000);
    expect(sweeps.every((s) => (s as { status: string; outcome?: string }).outcome === 'succeeded')).toBe(true);

    expect(await drift()).toEqual([]);
    // Each repair set exactly the injected +5 back, once: a repair that raced a live increment or a
    // read would show another difference, or a second row for the same user.
    const audit = await pool.query<{ user_id: string; diff: number; n: number }>(
      'SELECT user_id, min(stored - recounted) AS diff, count(*)::int AS n FROM counter_repairs GROUP BY user_id ORDER BY user_id',
    );
    expect(audit.rows).toEqual(drifted.map((u) => ({ user_id: u, diff: 5, n: 1 })));
    expect(await rc.scheduler.runOnce('counters.sweep', { force: true })).toMatchObject({ counts: { drifted: 0 } });
  }, 90_000);

  it("an operator's full recount goes through reconciler.low-priority, one batch per message, and repairs everything", async () => {
    await pool.query('UPDATE notification_counters SET unread_count = unread_count + 1 WHERE user_id = ANY($1)', [
      users,
    ]);
    const res = await rc.app.inject({ method: 'POST', url: '/v1/admin/recount', headers: admin(), payload: {} });
    expect(res.statusCode).toBe(202);
    const total = Number((await pool.query('SELECT count(*) FROM notification_counters')).rows[0].count);
    expect(res.json()).toMatchObject({ mode: 'queued', batches: Math.ceil(total / 5) });
    await eventually('queued batches repaired', async () => (await drift()).length === 0, 20_000);
    const rows = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM counter_repairs WHERE source = 'queue:volunteer'",
    );
    expect(rows.rows[0].n).toBe(users.length);
  }, 60_000);
});

describe("why did (or didn't) a user get a notification", () => {
  beforeAll(async () => {
    await produce(
      ev('user.upserted', { userId: 'ada', email: 'ada@example.test', displayName: 'Ada' }),
      ev('user.upserted', { userId: 'bob', email: 'bob@example.test', displayName: 'Bob' }),
    );
    await eventually(
      'users projected in email-service',
      async () => (await pool.query('SELECT 1 FROM email_users')).rowCount === 2,
      20_000,
    );
  });

  const why = async (query: string) => {
    const res = await rc.app.inject({ method: 'GET', url: `/v1/admin/why?${query}`, headers: admin() });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { steps: { step: string; status: string; detail: string }[]; verdict: string };
    return { ...body, at: (step: string) => body.steps.find((s) => s.step === step) };
  };

  it('delivered: every step ok, down to the SMTP answer', async () => {
    const e = mention('c-delivered', 'bob', 'ada');
    await produce(e);
    await eventually(
      'email sent',
      async () =>
        (await pool.query("SELECT 1 FROM email_deliveries WHERE state = 'sent' AND user_id = 'ada'")).rowCount === 1,
      20_000,
    );
    const w = await why(`userId=ada&eventId=${e.id}`);
    expect(w.steps.map((s) => [s.step, s.status])).toEqual([
      ['event.received', 'ok'],
      ['event.validated', 'ok'],
      ['event.processed', 'ok'],
      ['self-action', 'ok'],
      ['preferences', 'ok'],
      ['in-app', 'ok'],
      ['email.decision', 'ok'],
      ['email.ledger', 'ok'],
      ['email.smtp', 'ok'],
      ['dead-letter', 'ok'],
    ]);
    expect(w.verdict).toBe('delivered');
    expect(w.at('email.smtp')?.detail).toMatch(/accepted by SMTP \(the primary provider\) at .*250/);
    // The same answer by comment id and by idempotency key.
    expect((await why('userId=ada&commentId=c-delivered')).verdict).toBe('delivered');
    expect(
      (await why(`userId=ada&idempotencyKey=${encodeURIComponent('mention:c-delivered:ada')}`)).at('in-app')?.status,
    ).toBe('ok');
    // What a volunteer types.
    const cli = await runOps('why', '--user', 'ada', '--event', e.id);
    expect(cli.code).toBe(0);
    expect(cli.out).toMatch(/verdict: delivered/);
  }, 30_000);

  it('muted: the preference step says so, and no email was decided', async () => {
    const token = jwt(JWT_SECRET, { sub: 'bob' });
    const put = await ns.app.inject({
      method: 'PUT',
      url: '/v1/users/bob/preferences',
      headers: { authorization: `Bearer ${token}` },
      payload: { preferences: { mention: { inApp: false, email: 'off' } } },
    });
    expect(put.statusCode).toBe(200);
    const e = mention('c-muted', 'ada', 'bob');
    await produce(e);
    await eventually(
      'processed',
      async () => (await pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [e.id])).rowCount === 1,
      20_000,
    );
    const w = await why(`userId=bob&eventId=${e.id}`);
    expect(w.at('preferences')).toMatchObject({
      status: 'skipped',
      detail: expect.stringMatching(/mention for bob now: in-app off, email off \(muted\)/),
    });
    expect(w.at('email.decision')?.status).toBe('skipped');
    expect(w.verdict).toMatch(/^preferences: /);
    expect((await runOps('why', '--user', 'bob', '--comment', 'c-muted')).out).toMatch(
      /verdict: preferences: mention for bob now: in-app off, email off \(muted\)/,
    );
  }, 30_000);

  it('self-action: nobody is notified of their own mention', async () => {
    const e = mention('c-self', 'ada', 'ada');
    await produce(e);
    await eventually(
      'processed',
      async () => (await pool.query('SELECT 1 FROM processed_events WHERE event_id = $1', [e.id])).rowCount === 1,
      20_000,
    );
    const w = await why(`userId=ada&eventId=${e.id}`);
    expect(w.at('event.processed')?.status).toBe('ok');
    expect(w.at('self-action')).toEqual({
      step: 'self-action',
      status: 'skipped',
      detail: 'ada is the actor of this user.mentioned: nobody is notified of their own action',
    });
    expect(w.verdict).toMatch(/^self-action: ada is the actor/);
    expect((await runOps('why', '--user', 'ada', '--event', e.id, '--json')).out).toMatch(
      /"verdict": "self-action: ada is the actor of this user.mentioned/,
    );
  }, 30_000);

  it('dead-lettered: the DLQ entry and its cause', async () => {
    // A producer bug: the event names no mentioned user. Refused by the contract, dead-lettered at once.
    const bad = {
      ...mention('c-bad', 'bob', 'ada'),
      data: { commentId: 'c-bad', postId: 'p1', actorId: 'bob', excerpt: 'x' },
    } as unknown as AnyEvent;
    await rc.messaging?.publisher.publish(bad, { exchange: 'community.events' });
    // The DLQ console takes it off the broker's DLQ into its table; "why" finds it there.
    await eventually(
      'dead-lettered and stored by the DLQ console',
      async () => (await pool.query('SELECT 1 FROM dlq_messages WHERE message_id = $1', [bad.id])).rowCount === 1,
      20_000,
    );
    const w = await why(`userId=ada&eventId=${bad.id}`);
    expect(w.at('event.processed')).toMatchObject({
      status: 'failed',
      detail: expect.stringMatching(
        /dead-lettered in notification-service\.critical\.dlq at .*: permanent: ContractError/,
      ),
    });
    expect(w.at('dead-letter')?.status).toBe('failed');
    expect(w.verdict).toMatch(/^event.validated: dead-lettered: permanent: ContractError: .*mentionedUserId/);
    expect((await runOps('why', '--user', 'ada', '--event', bad.id)).out).toMatch(
      /verdict: event.validated: dead-lettered: permanent: ContractError/,
    );
  }, 30_000);

  it('asks for exactly one of eventId, commentId, idempotencyKey', async () => {
    const res = await rc.app.inject({
      method: 'GET',
      url: '/v1/admin/why?userId=ada&eventId=a&commentId=b',
      headers: admin(),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('RC_WHY_TARGET_REQUIRED');
  });
});

describe('the status checklist', () => {
  type Status = { ok: boolean; checks: { name: string; ok: boolean; detail: string; runbook: string }[] };
  const status = async (): Promise<Status> => {
    const res = await rc.app.inject({ method: 'GET', url: '/v1/admin/status', headers: admin() });
    expect(res.statusCode).toBe(200);
    return res.json() as Status;
  };
  const failing = (s: Status) => s.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail} (${c.runbook})`);
  /** Messages in a queue as the management API reports them: the figure the watchdog samples. */
  const managementDepth = async (queue: string): Promise<number> => {
    const res = await managementRequest(
      vhost.management,
      'GET',
      `/queues/${encodeURIComponent(vhost.vhost)}/${encodeURIComponent(queue)}`,
    );
    if (!res.ok) throw new Error(`management API: HTTP ${res.status}`);
    return ((await res.json()) as { messages?: number }).messages ?? 0;
  };

  it('is ok on a healthy stack: `ops status` exits 0', async () => {
    // The dead letter left by the "why" case above is decided first, as a volunteer would.
    expect((await runOps('dlq', 'discard', '--state', 'pending', '--yes')).code).toBe(0);
    await eventually('queues idle', async () => (await status()).ok || undefined, 20_000).catch(async () => {
      throw new Error(`not healthy: ${failing(await status()).join('\n')}`);
    });
    // The CLI asks again, and the management API's figures can move between two asks (a quorum
    // queue's ready count refreshes apart from its ack rate): wait for the CLI's own answer too.
    const cli = await eventually(
      '`ops status` exits 0',
      async () => {
        const r = await runOps('status');
        return r.code === 0 ? r : undefined;
      },
      20_000,
    ).catch(async () => runOps('status'));
    expect(cli).toMatchObject({ code: 0, out: expect.stringMatching(/All checks pass\./) });
  }, 60_000);

  it('names the queue whose consumer stopped', async () => {
    await es.sendConsumer.pause();
    try {
      await eventually(
        'consumer gone',
        async () =>
          failing(await status()).some((l) =>
            l.startsWith('consumers: email-service.send: no consumer (docs/RUNBOOK.md#check-consumers)'),
          ),
        10_000,
      );
      const cli = await runOps('status');
      expect(cli.code).toBe(1);
      expect(cli.out).toMatch(
        /^FAIL +consumers .*email-service\.send: no consumer.*→ see docs\/RUNBOOK\.md#check-consumers$/m,
      );
    } finally {
      await es.sendConsumer.resume();
    }
    await eventually('consumer back', async () => (await status()).ok, 10_000);
  }, 30_000);

  it('names a poisoned queue: it grows while its consumer acks nothing', async () => {
    // A stuck lock on one inbox holds every batch for that user: the consumer is attached but cannot ack.
    await produce(mention('c-poison-0', 'bob', 'stuck'));
    await eventually(
      'stuck user exists',
      async () => (await pool.query("SELECT 1 FROM notification_counters WHERE user_id = 'stuck'")).rowCount === 1,
      20_000,
    );
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM notification_counters WHERE user_id = 'stuck' FOR UPDATE");
      // The watchdog samples the management API, whose figures (depth and ack count) refresh every
      // few seconds, independently of each other: `rabbitmqctl` can show the growth while the next
      // sample still reports the previous depth (two equal samples: "not growing"), or an ack of an
      // earlier message can land in the stats between two samples. So each round waits until the
      // management API itself shows the new depth before sampling, and rounds continue, each one
      // growing the queue again, until the last WATCHDOG_SAMPLES samples grew with no ack.
      const stalledLine =
        /^consumers: notification-service\.critical: consumers attached but nothing acked while it grows \(docs\/RUNBOOK.md#check-consumers\)$/;
      let lines: string[] = [];
      for (let i = 1; i <= 8 && !lines.some((l) => stalledLine.test(l)); i++) {
        await produce(...Array.from({ length: 5 }, (_, k) => mention(`c-poison-${i}-${k}`, 'bob', 'stuck')));
        await eventually(
          'the management API shows the growth',
          async () => (await managementDepth('notification-service.critical')) >= i * 5,
          30_000,
        );
        expect(await rc.scheduler.runOnce('watchdog.queues', { force: true })).toMatchObject({
          status: 'ran',
          outcome: 'succeeded',
        });
        lines = failing(await status());
      }
      expect(lines).toContainEqual(expect.stringMatching(stalledLine));
      const cli = await runOps('status');
      expect(cli.code).toBe(1);
      expect(cli.out).toMatch(
        /^FAIL +consumers .*notification-service\.critical: consumers attached but nothing acked while it grows.*→ see docs\/RUNBOOK\.md#check-consumers$/m,
      );
      expect(await rc.app.inject({ method: 'GET', url: '/metrics' }).then((r) => r.body)).toMatch(
        /reconciler_watchdog_findings\{queue="notification-service.critical",kind="stalled"\} 1/,
      );
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    await eventually('drained', async () => (await vhost.depth('notification-service.critical')).total === 0, 30_000);
    await rc.scheduler.runOnce('watchdog.queues', { force: true });
    await rc.scheduler.runOnce('watchdog.queues', { force: true });
    expect(failing(await status()).filter((l) => l.startsWith('consumers'))).toEqual([]);
  }, 120_000);

  it('names injected drift until a recount finds none', async () => {
    await produce(mention('c-drifty', 'bob', 'drifty'));
    await eventually('drifty counted', async () => (await unread(['drifty'])) === 1, 20_000);
    await pool.query("UPDATE notification_counters SET unread_count = unread_count + 3 WHERE user_id = 'drifty'");
    await rc.scheduler.runOnce('counters.recount-recent', { force: true, dryRun: true });
    expect((await status()).checks.find((c) => c.name === 'counter-drift')?.ok).toBe(true); // a dry run is not "the last recount"
    await rc.scheduler.runOnce('counters.recount-recent', { force: true });
    expect(failing(await status())).toContainEqual(
      expect.stringMatching(
        /^counter-drift: 1 unread counters differed from their recount at .* \(counters.recount-recent; repaired and audited in counter_repairs\) \(docs\/RUNBOOK.md#check-counter-drift\)$/,
      ),
    );
    const cli = await runOps('status');
    expect(cli.code).toBe(1);
    expect(cli.out).toMatch(
      /^FAIL +counter-drift +1 \(threshold 0\) — 1 unread counters differed .*→ see docs\/RUNBOOK\.md#check-counter-drift$/m,
    );
    await rc.scheduler.runOnce('counters.recount-recent', { force: true });
    expect((await status()).checks.find((c) => c.name === 'counter-drift')).toMatchObject({ ok: true });
    expect((await runOps('status')).code).toBe(0);
  }, 30_000);
});
