import { randomUUID } from 'node:crypto';
import { eventually } from '@community/testing';
import { messageIdDomain, messageIdFor } from '../src/message-id';
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

// Two real SMTP servers (test/support/smtp.ts), the primary (SMTP_URL) and the fallback
// (SMTP_FALLBACK_URL), each on a port of its own. Breaker timings come from the configuration:
// threshold 2, probes every 50–200 ms; sockets time out after 1 s. Every wait below is for a
// condition (rows, emails, breaker states), never for a time.
const RETRY_DELAYS_MS = [200, 400, 800];
const BREAKER = {
  SMTP_BREAKER_THRESHOLD: '2',
  SMTP_BREAKER_PROBE_MIN_MS: '50',
  SMTP_BREAKER_PROBE_MAX_MS: '200',
  SMTP_BREAKER_MAX_HOLD_MS: '60000',
  SMTP_SOCKET_TIMEOUT_MS: '1000',
  EMAIL_CONSUMER_CONCURRENCY: '4',
};

interface LedgerRow {
  key: string;
  state: string;
  provider: string | null;
  attempt_provider: string | null;
  pinned_provider: string | null;
  message_id: string;
}

async function ledger(s: StartedService): Promise<Map<string, LedgerRow>> {
  const res = await s.svc.pool.query<LedgerRow>(
    `SELECT idempotency_key AS key, state::text, provider::text, attempt_provider::text, pinned_provider::text, message_id
       FROM email_deliveries WHERE channel = 'immediate'`,
  );
  return new Map(res.rows.map((r) => [r.key, r]));
}

/** The Message-ID of a key's ledger row. */
function idOf(rows: Map<string, LedgerRow>, key: string): string {
  const row = rows.get(key);
  if (!row) throw new Error(`no ledger row for ${key}`);
  return row.message_id;
}

/** How many copies of each Message-ID a server holds. */
function copies(smtp: TestSmtp): Map<string, number> {
  const out = new Map<string, number>();
  for (const id of smtp.messageIds()) out.set(id, (out.get(id) ?? 0) + 1);
  return out;
}

async function publishMentions(s: StartedService, n: number): Promise<string[]> {
  const events = Array.from({ length: n }, () => notificationCreated({ userId: 'alice' }));
  for (const e of events) await s.publish(e);
  return events.map((e) => e.data.idempotencyKey);
}

async function allSent(
  s: StartedService,
  keys: readonly string[],
  timeoutMs = 20_000,
): Promise<Map<string, LedgerRow>> {
  let rows = new Map<string, LedgerRow>();
  await eventually(
    `${keys.length} emails sent`,
    async () => {
      rows = await ledger(s);
      return keys.every((k) => rows.get(k)?.state === 'sent');
    },
    timeoutMs,
  );
  return rows;
}

async function startWith(infra: Infra, primary: TestSmtp, fallback?: TestSmtp): Promise<StartedService> {
  const config = testConfig(infra, primary, {
    ...BREAKER,
    ...(fallback ? { SMTP_FALLBACK_URL: fallback.url } : {}),
  });
  const s = await startService(config, { retryDelaysMs: RETRY_DELAYS_MS });
  await s.publish(userUpserted('alice', 'alice@example.test', 'Alice'));
  await eventually('alice projected', async () => (await s.svc.pool.query('SELECT 1 FROM email_users')).rowCount === 1);
  return s;
}

describe('with a fallback provider', () => {
  let infra: Infra;
  let primary: TestSmtp;
  let fallback: TestSmtp;
  let s: StartedService;

  beforeEach(async () => {
    infra = await createInfra('email_failover');
    [primary, fallback] = await Promise.all([new TestSmtp().start(), new TestSmtp().start()]);
    s = await startWith(infra, primary, fallback);
  });

  afterEach(async () => {
    await s?.svc.stop();
    await s?.svc.app.close();
    await Promise.all([primary?.close(), fallback?.close()]);
    await infra?.close();
  });

  it('sends through the fallback while the primary is down, and through the primary again once it is back; each email once', async () => {
    const [warm] = await publishMentions(s, 1);
    expect((await allSent(s, [warm])).get(warm)?.provider).toBe('primary');

    // The primary goes down for real: every connection is reset before its greeting.
    primary.goDown();
    const primaryCopiesBefore = primary.received.length;
    const duringOutage = await publishMentions(s, 10);
    const rows = await allSent(s, duringOutage);
    for (const k of duringOutage) expect(rows.get(k)).toMatchObject({ provider: 'fallback', pinned_provider: null });
    expect(primary.received.length).toBe(primaryCopiesBefore);

    // The primary's breaker is open, the email queues' is not: nothing is paused.
    expect(s.svc.breaker.describeProviders().primary?.state).toBe('open');
    const ready = await s.svc.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().details).toMatchObject({
      smtpBreaker: { state: 'closed' },
      smtpProviders: { primary: { state: 'open' }, fallback: { state: 'closed' }, sendingThrough: 'fallback' },
      emailQueue: 'consuming',
    });
    expect(await s.metric('email_smtp_provider_breaker_open', { provider: 'primary' })).toBe(1);
    expect(await s.metric('email_smtp_provider_breaker_open', { provider: 'fallback' })).toBe(0);
    expect(await s.metric('email_smtp_breaker_open')).toBe(0);
    expect(await s.metric('email_sends_total', { provider: 'fallback', outcome: 'sent' })).toBe(10);
    const flow = await s.svc.app.inject({ method: 'GET', url: '/v1/flow-control' });
    expect(flow.json().breakers).toMatchObject([
      {
        series: 'email_smtp_breaker_open',
        state: 'closed',
        pauses: ['email-service.send', 'email-service.send-critical'],
      },
      {
        series: 'email_smtp_provider_breaker_open{provider="primary"}',
        state: 'open',
        lastError: expect.stringMatching(/\S/),
        pauses: [],
      },
      { series: 'email_smtp_provider_breaker_open{provider="fallback"}', state: 'closed', pauses: [] },
    ]);
    // The series named there is the one /metrics carries (the reconciler matches them).
    const metrics = await s.svc.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/^email_smtp_provider_breaker_open\{provider="primary"\} 1$/m);

    // Back: the half-open probe succeeds, the breaker closes, and the next emails go to the primary.
    primary.goUp();
    await eventually('primary breaker closed', () => s.svc.breaker.preferred() === 'primary', 20_000, 20);
    const afterRecovery = await publishMentions(s, 5);
    const after = await allSent(s, afterRecovery);
    for (const k of afterRecovery) expect(after.get(k)?.provider).toBe('primary');

    // Every email received exactly once, by the provider its ledger row names.
    const all = [warm, ...duringOutage, ...afterRecovery];
    const [p, f] = [copies(primary), copies(fallback)];
    for (const k of all) {
      const row = after.get(k);
      if (!row) throw new Error(`no ledger row for ${k}`);
      const where = row.provider === 'primary' ? p : f;
      const other = row.provider === 'primary' ? f : p;
      expect([where.get(row.message_id), other.get(row.message_id)]).toEqual([1, undefined]);
    }
    expect(primary.received.length + fallback.received.length).toBe(all.length);
  });

  it('never sends through the fallback an email whose attempt on the primary may have gone out', async () => {
    // The primary takes the whole message and never answers; then its front door fails too, while
    // the two conversations in progress stay open: they end by the socket timeout, the outcome unknown.
    primary.behaviour.onMessage = () => new Promise(() => undefined);
    const [a, b] = await publishMentions(s, 2);
    await eventually('the primary holds both messages, unanswered', () => primary.received.length === 2);
    primary.refuseNewConnections();

    // Both time out (threshold 2: the primary's breaker opens) and are bound to the primary, held.
    await eventually('both bound to the primary', async () => {
      const rows = await ledger(s);
      return [a, b].every((k) => rows.get(k)?.pinned_provider === 'primary' && rows.get(k)?.state === 'pending');
    });
    expect(s.svc.breaker.preferred()).toBe('fallback');
    await eventually('both held for the primary', () => s.svc.breaker.describeProviders().primary?.held === 2);

    // A crash mid-send on the primary: a row left in 'sending' by a dead process, its lease expired.
    const crashed = notificationCreated({ userId: 'alice' });
    const crashedKey = crashed.data.idempotencyKey;
    await s.svc.pool.query(
      `INSERT INTO email_deliveries (idempotency_key, channel, user_id, message_id, notification_type, notification_id,
                                     state, attempts, lease_token, lease_until, lease_holder, attempt_provider)
       VALUES ($1, 'immediate', 'alice', $2, 'mention', $3, 'sending', 1, $4, now() - interval '1 minute', $5, 'primary')`,
      [
        crashedKey,
        messageIdFor('immediate', crashedKey, messageIdDomain(s.config.EMAIL_FROM)),
        crashed.data.notificationId,
        randomUUID(),
        randomUUID(),
      ],
    );
    await s.publish(crashed);
    await eventually('the crashed send bound to the primary', async () => {
      const row = (await ledger(s)).get(crashedKey);
      return row?.pinned_provider === 'primary' && row.state === 'pending';
    });

    // Meanwhile a new email goes out through the fallback: the held ones are not in its way there.
    const [c] = await publishMentions(s, 1);
    expect((await allSent(s, [c])).get(c)?.provider).toBe('fallback');
    const rows = await ledger(s);
    for (const k of [a, b, crashedKey])
      expect(rows.get(k)).toMatchObject({ state: 'pending', pinned_provider: 'primary' });
    expect(fallback.messageIds()).toEqual([idOf(rows, c)]);
    expect(await s.metric('email_smtp_breaker_open')).toBe(0);

    // The primary answers again: the held emails go out there, with the same Message-ID.
    primary.behaviour = {};
    primary.goUp();
    const done = await allSent(s, [a, b, crashedKey]);
    for (const k of [a, b, crashedKey])
      expect(done.get(k)).toMatchObject({ provider: 'primary', pinned_provider: 'primary' });

    // Across both servers: the fallback holds only C. The primary holds A and B twice each (the
    // unanswered copy and its retry, one Message-ID: the at-least-once edge of an unknown outcome,
    // on one provider) and the crashed send once; none of them ever reached the fallback.
    const [p, f] = [copies(primary), copies(fallback)];
    expect(Object.fromEntries(f)).toEqual({ [idOf(done, c)]: 1 });
    expect([a, b, crashedKey].map((k) => p.get(idOf(done, k)))).toEqual([2, 2, 1]);
    expect(p.has(idOf(done, c))).toBe(false);
  });
});

describe('without a fallback provider', () => {
  let infra: Infra;
  let primary: TestSmtp;
  let s: StartedService;

  beforeAll(async () => {
    infra = await createInfra('email_failover_single');
    primary = await new TestSmtp().start();
    s = await startWith(infra, primary);
  });

  afterAll(async () => {
    await s?.svc.stop();
    await s?.svc.app.close();
    await primary?.close();
    await infra?.close();
  });

  it('behaves as before: the breaker pauses the queues and holds, everything goes out through SMTP_URL once it is back', async () => {
    primary.goDown();
    const keys = await publishMentions(s, 6);
    await eventually('breaker open', () => s.svc.breaker.isOpen(), 20_000, 20);
    const ready = await s.svc.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.json().details).toMatchObject({
      smtpBreaker: { state: 'open' },
      smtpProviders: { primary: { state: 'open' }, sendingThrough: null },
      emailQueue: 'paused',
    });
    expect(ready.json().details.smtpProviders.fallback).toBeUndefined();
    expect(await s.metric('email_smtp_breaker_open')).toBe(1);
    // One provider: the one breaker series, as before; no per-provider series.
    const flow = await s.svc.app.inject({ method: 'GET', url: '/v1/flow-control' });
    expect(flow.json().breakers).toMatchObject([{ series: 'email_smtp_breaker_open', state: 'open' }]);
    expect(flow.json().breakers).toHaveLength(1);
    const metrics = await s.svc.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).not.toMatch(/^email_smtp_provider_breaker_open\{/m);

    primary.goUp();
    const rows = await allSent(s, keys);
    for (const k of keys) expect(rows.get(k)?.provider).toBe('primary');
    const p = copies(primary);
    expect(keys.map((k) => p.get(idOf(rows, k)))).toEqual(keys.map(() => 1));
  });
});
