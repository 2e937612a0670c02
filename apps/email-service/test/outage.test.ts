import { buildEvent, validateOrThrow } from '@community/contracts';
import { backoffDelay } from '@community/messaging';
import { eventually } from '@community/testing';
import {
  createInfra,
  notificationCreated,
  startService,
  testConfig,
  userUpserted,
  type Infra,
  type StartedService,
} from './support/harness';
import { TestSmtp } from './support/smtp';

// The provider goes down, with the breaker's timings set through configuration: threshold 3,
// probes every 0.2–1 s, in-flight messages held up to 60 s. The outage lasts until the breaker has
// been open for twice the whole retry schedule (1 + 2 + 4 s): without the breaker, every message
// would have spent its retries and reached the DLQ by then. Every bound below is a count the
// mechanism fixes (threshold, concurrency, probe schedule), not a measured latency.
const RETRY_DELAYS_MS = [1000, 2000, 4000];
const OUTAGE_MS = 2 * RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
const EMAILS = 30;
const THRESHOLD = 3;
const CONCURRENCY = 8;
const PROBE_MIN_MS = 200;
const PROBE_MAX_MS = 1000;
const MENTIONS_PER_BATCH = 5;

/**
 * The most probes the breaker's schedule allows in `openMs`: probe k starts after k waits, each at
 * least half its ceiling (equal jitter, breaker.ts, drawn here with random = 0), less 1 ms of timer
 * granularity each. A busy machine only makes the waits longer, so it can only lower the count.
 */
function maxProbesWithin(openMs: number): number {
  let k = 0;
  for (let elapsed = 0; ; k++) {
    elapsed += backoffDelay(k, { baseMs: PROBE_MIN_MS, maxMs: PROBE_MAX_MS, jitter: 'equal', random: () => 0 }) - 1;
    if (elapsed > openMs) return k;
  }
}

let infra: Infra;
let smtp: TestSmtp;
let s: StartedService;
/** Each mention as the stand-in consumer saw it: was the breaker open, how many emails were out. */
const critical: Array<{ id: string; breakerOpen: boolean; emailsReceived: number }> = [];

beforeAll(async () => {
  infra = await createInfra('email_outage');
  smtp = await new TestSmtp().start();
  const config = testConfig(infra, smtp, {
    SMTP_BREAKER_THRESHOLD: String(THRESHOLD),
    SMTP_BREAKER_PROBE_MIN_MS: String(PROBE_MIN_MS),
    SMTP_BREAKER_PROBE_MAX_MS: String(PROBE_MAX_MS),
    SMTP_BREAKER_MAX_HOLD_MS: '60000',
    EMAIL_CONSUMER_CONCURRENCY: String(CONCURRENCY),
  });
  s = await startService(config, {
    retryDelaysMs: RETRY_DELAYS_MS,
    // A consumer of the mention queue in the same process and on the same AMQP connection, standing
    // in for notification-service: an email outage must not slow it down.
    before: (svc) =>
      svc.messaging.consume({
        queue: 'notification-service.critical',
        name: 'mentions',
        validate: validateOrThrow,
        handle: async (event) => {
          critical.push({ id: event.id, breakerOpen: s.svc.breaker.isOpen(), emailsReceived: smtp.received.length });
          return 'processed';
        },
      }),
  });
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('alice projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
});

afterAll(async () => {
  await s?.svc.stop();
  await s?.svc.app.close();
  await smtp?.close();
  await infra?.close();
});

it(
  'opens the breaker, pauses only the email queue, spends no retries, and delivers everything after recovery',
  async () => {
    const warm = notificationCreated({ userId: 'alice' });
    await s.publish(warm);
    // Wait for the ledger, not the server: cutting the connection between the server's copy and
    // its 250 reply would be an ambiguous send, re-sent later (with the same Message-ID).
    await eventually(
      'warm-up email sent (pooled connections open)',
      async () => (await s.svc.pool.query(`SELECT 1 FROM email_deliveries WHERE state = 'sent'`)).rowCount === 1,
    );

    smtp.goDown();
    const connectionsBefore = smtp.connections;
    const retriedBefore = await s.metric('messaging_retried_total', { queue: 'email-service.send' });
    const events = Array.from({ length: EMAILS }, () => notificationCreated({ userId: 'alice' }));
    await Promise.all(events.map((e) => s.publish(e)));

    await eventually('breaker open', () => s.svc.breaker.isOpen(), 20_000, 20);
    const ready = await s.svc.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200); // a paused email queue does not make the pod unready
    expect(ready.json().details).toMatchObject({ smtpBreaker: { state: 'open' }, emailQueue: 'paused' });
    expect(await s.metric('email_smtp_breaker_open')).toBe(1);
    // What the reconciler's `consumers` and `breakers` lines read: which queues are paused, and why.
    const flow = await s.svc.app.inject({ method: 'GET', url: '/v1/flow-control' });
    expect(flow.json()).toMatchObject({
      breakers: [
        {
          series: 'email_smtp_breaker_open',
          state: 'open',
          lastError: expect.stringMatching(/\S/),
          lastErrorAt: expect.any(String),
          pauses: ['email-service.send', 'email-service.send-critical'],
        },
      ],
      rateLimits: [{ name: 'SMTP rate limit', queues: ['email-service.send', 'email-service.send-critical'] }],
    });

    // Meanwhile mentions keep flowing on the same connection, and so do user updates: a batch at the
    // start of the outage and one at its end, each consumed while the breaker is still open and
    // none of the 30 queued emails is out (a paused consumer would never see them).
    const mentionIds: string[] = [];
    const publishMentions = async () => {
      for (let i = 0; i < MENTIONS_PER_BATCH; i++) {
        const mention = buildEvent(
          'user.mentioned',
          {
            commentId: `c-${mentionIds.length}`,
            postId: 'p',
            actorId: 'bob',
            mentionedUserId: 'alice',
            excerpt: 'hey',
          },
          { producer: 'test' },
        );
        mentionIds.push(mention.id);
        await s.publish(mention);
      }
      await eventually(
        'mentions consumed during the outage',
        () => mentionIds.every((id) => critical.some((c) => c.id === id)),
        30_000,
      );
    };
    await publishMentions();
    await eventually(
      'outage outlasts the retry schedule twice',
      () => s.svc.breaker.describe().openForMs >= OUTAGE_MS,
      OUTAGE_MS + 30_000,
      250,
    );
    await eventually('probes while open', async () => (await s.metric('email_smtp_breaker_probes_total')) >= 3, 30_000);
    await publishMentions();
    await s.publish(userUpserted('zoe', 'zoe@example.test', 'Zoe'));
    await eventually(
      'user projection keeps consuming during the outage',
      async () => (await s.svc.pool.query(`SELECT 1 FROM email_users WHERE user_id = 'zoe'`)).rowCount === 1,
      30_000,
    );
    expect(s.svc.breaker.isOpen()).toBe(true);
    expect(critical).toHaveLength(2 * MENTIONS_PER_BATCH);
    for (const c of critical) expect(c).toMatchObject({ breakerOpen: true, emailsReceived: 1 });

    // No retry storm: during the whole outage the SMTP server saw the few sends that tripped the
    // breaker and then only the probes; at most THRESHOLD - 1 messages took a retry tier (the ones
    // that failed before the breaker opened), the others were held or stayed in the queue.
    const connectionsDuringOutage = smtp.connections - connectionsBefore;
    const retriedDuringOutage =
      (await s.metric('messaging_retried_total', { queue: 'email-service.send' })) - retriedBefore;
    const probes = await s.metric('email_smtp_breaker_probes_total');
    // Read after the count, so the probes counted all fit in it.
    const { openForMs } = s.svc.breaker.describe();
    expect(retriedDuringOutage).toBeLessThanOrEqual(THRESHOLD - 1);
    expect(probes).toBeGreaterThanOrEqual(3);
    // Probes follow the backoff schedule, not a tight loop.
    expect(probes).toBeLessThanOrEqual(maxProbesWithin(openForMs));
    // Each failed send costs 2 connections (nodemailer requeues once). Without the breaker: 30 emails
    // × 2 × 3 attempts within 5 s of 1 s/2 s tiers ≈ 180 connections, and the retry budget spent.
    // With it: the sends in flight when it opened (8, plus the slots freed by the THRESHOLD - 1
    // retried ones before the pause took effect), then one connection per probe, plus the probe that
    // may be connecting right now (probes run one at a time; its outcome is not counted yet).
    const failedSends = await s.metric('email_sends_total', { outcome: 'transient' });
    expect(failedSends).toBeLessThanOrEqual(CONCURRENCY + THRESHOLD - 1);
    expect(connectionsDuringOutage).toBeLessThanOrEqual(failedSends * 2 + probes + 1);

    smtp.goUp();
    await eventually('breaker closed', () => !s.svc.breaker.isOpen(), 20_000, 20);
    await eventually(
      'every email delivered after recovery',
      () => new Set(smtp.messageIds()).size === EMAILS + 1,
      30_000,
    );
    expect(smtp.received).toHaveLength(EMAILS + 1); // and none twice
    expect(await s.metric('email_smtp_breaker_open')).toBe(0);
    expect(await s.metric('email_smtp_breaker_transitions_total', { to: 'open' })).toBe(1);
    await eventually('every ledger row sent', async () => {
      const { rows } = await s.svc.pool.query(`SELECT state, count(*)::int AS n FROM email_deliveries GROUP BY state`);
      return rows.length === 1 && rows[0].state === 'sent' && rows[0].n === EMAILS + 1;
    });
    expect(await infra.vhost.ready('email-service.send.dlq')).toBe(0);
  },
  OUTAGE_MS + 120_000,
);
