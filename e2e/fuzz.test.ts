import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  rabbitmqctl,
  testRedisPrefix,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { drain, openPublisher } from './fuzz/broker';
import { Canaries, leakedCanaries } from './fuzz/canaries';
import { badMessage, CONSUMED_QUEUES, goodEvent, goodUser, VICTIM, type BadMessage } from './fuzz/messages';
import { Rng, countFrom, runSeed } from './fuzz/random';
import { badRequest, type AppName, type BadRequest } from './fuzz/requests';
import * as fuzzSend from './fuzz/send';
import { hasReason, pool, send } from './fuzz/send';
import { badAuthKinds, goodToken } from './fuzz/tokens';
import { appsEnv, freePort, http, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * Fuzz over the public interfaces only: bad messages on the topic exchange and bad HTTP requests
 * to every app (the demo API, notification-service, email-service, feed-service, push-service, and
 * the reconciler's admin API and DLQ console), run as real processes. Every bad input must end as a 4xx with a reason or in a
 * DLQ with a reason; no 5xx, no exit, and no PII canary in any log line. The bad authorization is
 * every principal's token form of docs/SECURITY.md with one defect each (fuzz/tokens.ts `badAuth`):
 * user, operator and service tokens, wrong audience or issuer, expired, unsigned, an unknown kid, a
 * service token where it is not taken, an HS256 token with the admin scope.
 *
 * FUZZ_MESSAGES / FUZZ_REQUESTS size the run; FUZZ_SEED replays one (the seed is in every failure).
 */
const SEED = runSeed();
const MESSAGES = countFrom('FUZZ_MESSAGES', 10_000);
const REQUESTS = countFrom('FUZZ_REQUESTS', 10_000);
const SECRET = 'fuzz-secret-fuzz-secret-fuzz-secret-1';
const OWNER = 'fuzz-owner';
const OTHER = 'fuzz-other';
const GOOD_USER = 'fuzz-good';
/** A test's time limit grows with its size, so a bigger FUZZ_* run needs no other knob. */
const budgetMs = (count: number) => 120_000 + count * 20;

const rng = new Rng(SEED);
const canaries = new Canaries(rng);
// The good path handles addresses too (stored, sent to): they are canaries like the rest.
const GOOD_EMAIL = canaries.email();
const OWNER_EMAIL = canaries.email();
let vhost: TestVhost;
/** The reconciler's own: its DLQ console would otherwise take the dead letters this test counts. */
let reconcilerVhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<AppName, App> = {} as Record<AppName, App>;
const figures: Record<string, unknown> = { seed: SEED };

function check(ok: boolean, what: string, detail?: unknown): void {
  if (!ok)
    throw new Error(
      `FUZZ_SEED=${SEED}: ${what}${detail === undefined ? '' : `\n${JSON.stringify(detail, null, 2).slice(0, 6000)}`}`,
    );
}

const auth = (sub: string) => ({ authorization: `Bearer ${goodToken(SECRET, sub)}` });

async function sql<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text)).rows;
  } finally {
    await client.end();
  }
}

async function inbox(userId: string): Promise<Array<{ type: string }>> {
  const items: Array<{ type: string }> = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = await http<{ items: Array<{ type: string }>; nextCursor: string | null }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications?limit=100${q}`,
      undefined,
      auth(userId),
    );
    check(page.status === 200, `inbox of ${userId} answered ${page.status}`, page.body);
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  } while (cursor);
  return items;
}

beforeAll(async () => {
  [vhost, reconcilerVhost, db, smtp] = await Promise.all([
    createTestVhost('fuzz'),
    createTestVhost('fuzz-rc'),
    createTestDatabase('fuzz'),
    startSmtpSink(),
  ]);
  const [api, notifications, email, feed, push, reconciler] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const env = {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
    // Thousands of writes from one address and a few users: the demo API's write rate limit would answer 429.
    DEMO_WRITE_RATE_LIMIT: '1000000',
    // feed-service's Redis keys and the reconciler's view of them, under a prefix of this run's own.
    FEED_REDIS_PREFIX: testRedisPrefix('fuzz'),
    // Every line an app can write at debug is scanned for canaries.
    LOG_LEVEL: process.env.FUZZ_LOG_LEVEL ?? 'debug',
  };
  apps.notifications = await startApp('notification-service', notifications, env);
  [apps.email, apps.api, apps.feed, apps.push, apps.reconciler] = await Promise.all([
    startApp('email-service', email, env),
    startApp('demo-community-api', api, env),
    startApp('feed-service', feed, env),
    // Without PUSH_ALLOW_INSECURE_LOCALHOST: an http endpoint is a bad one. No push is ever sent:
    // no request subscribes a browser.
    startApp('push-service', push, env),
    // HTTP and the DLQ console only: no scheduled job runs beside the fuzz, no breaker source.
    startApp('reconciler', reconciler, {
      ...env,
      AMQP_URL: reconcilerVhost.url,
      SCHEDULER: 'false',
      BREAKER_METRICS_URLS: 'none',
    }),
  ]);
  for (const [id, mail] of [
    [OWNER, OWNER_EMAIL],
    [OTHER, canaries.email()],
  ]) {
    const res = await http('POST', `${apps.api.url}/v1/users`, { id, email: mail, displayName: id });
    check(res.status === 201, `creating ${id} answered ${res.status}`, res.body);
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  // FUZZ_LOG_DIR=<dir> keeps every app's log lines for a look after a failure.
  if (process.env.FUZZ_LOG_DIR)
    for (const a of Object.values(apps))
      writeFileSync(path.join(process.env.FUZZ_LOG_DIR, `${a.name}.log`), a.output.join(''));
  await smtp?.close();
  await Promise.all([vhost?.delete(), reconcilerVhost?.delete(), db?.drop()]);
  console.log(`fuzz figures: ${JSON.stringify(figures)}`);
});

it(
  `${MESSAGES} bad messages end in the DLQ of each queue they reach, with a reason; good ones in between are processed once`,
  async () => {
    const started = Date.now();
    const publisher = await openPublisher(vhost.url);
    const messages: BadMessage[] = [];
    const goodCount = Math.max(20, Math.round(MESSAGES / 100));
    const every = Math.max(1, Math.floor(MESSAGES / goodCount));
    let mentions = 0;
    let reactions = 0;
    try {
      publisher.good(goodUser(rng, GOOD_USER, GOOD_EMAIL));
      for (let n = 0; n < MESSAGES; n++) {
        const m = badMessage(rng, canaries, n);
        messages.push(m);
        publisher.bad(m);
        if (n % every === 0 && mentions + reactions < goodCount) {
          const type = (mentions + reactions) % 2 === 0 ? 'user.mentioned' : 'reaction.added';
          publisher.good(goodEvent(rng, type, GOOD_USER, OWNER, n));
          if (type === 'user.mentioned') mentions++;
          else reactions++;
        }
        if (n % 500 === 499) await publisher.confirmed();
      }
      await publisher.confirmed();
    } finally {
      await publisher.close();
    }
    const published = Date.now();

    // Every copy of a bad message, per queue it was routed to.
    const expected = new Map<string, number[]>();
    for (const m of messages) for (const q of m.queues) expected.set(q, [...(expected.get(q) ?? []), m.n]);

    for (const queue of CONSUMED_QUEUES) {
      const want = expected.get(queue) ?? [];
      const dead = await drain(vhost.url, `${queue}.dlq`, want.length, 60_000 + want.length * 10);
      const ids = dead.map((d) => Number(d.headers['x-fuzz-id']));
      const seen = new Set(ids);
      const missing = want.filter((n) => !seen.has(n));
      check(missing.length === 0, `${queue}.dlq lacks ${missing.length} of ${want.length} bad messages`, {
        queues: missing.length ? Object.fromEntries([...(await queueDepths())].filter(([, n]) => n > 0)) : {},
        byDefect: countBy(missing.map((n) => messages[n].defect)),
        first: missing.slice(0, 10).map((n) => ({
          n,
          defect: messages[n].defect,
          routingKey: messages[n].routingKey,
          body: messages[n].body.toString('utf8').slice(0, 200),
        })),
      });
      check(
        dead.length === want.length && new Set(ids).size === ids.length,
        `${queue}.dlq holds ${dead.length} copies of ${new Set(ids).size} distinct messages for ${want.length} bad ones`,
      );
      const reasonless = dead.filter(
        (d) => !d.headers['x-error-class'] || !d.headers['x-error-message'] || d.headers['x-original-queue'] !== queue,
      );
      check(reasonless.length === 0, `${queue}.dlq has messages without a reason`, reasonless.slice(0, 5));
      const transient = dead.filter((d) => d.headers['x-error-kind'] !== 'permanent');
      check(
        transient.length === 0,
        `${queue}: bad input must be dead-lettered as permanent at once, not retried`,
        transient.slice(0, 5).map((d) => d.headers),
      );
    }
    const deadLettered = Date.now();

    // Nothing left behind: work, retry and dead-letter queues empty (a bad message in a retry tier
    // was misclassified as transient). (A quorum queue's count lags a moment behind its consumers,
    // hence the polling.)
    const depths = await eventually(
      'every queue drained',
      async () => {
        const all = await queueDepths();
        return [...all].every(([, n]) => n === 0) ? all : undefined;
      },
      30_000,
      500,
    ).catch(async () => queueDepths());
    const leftover = [...depths].filter(([, n]) => n > 0);
    check(leftover.length === 0, 'messages left behind', Object.fromEntries(leftover));

    // The good events, exactly once each; the victim got nothing.
    const items = await eventually(
      'good events in the inbox',
      async () => {
        const got = await inbox(GOOD_USER);
        return got.length >= mentions + reactions ? got : undefined;
      },
      30_000,
      250,
    );
    check(
      items.filter((i) => i.type === 'mention').length === mentions && items.length === mentions + reactions,
      'good events not processed exactly once',
      { mentions, reactions, got: items.length },
    );
    const count = await http<{ count: number }>(
      'GET',
      `${apps.notifications.url}/v1/users/${GOOD_USER}/notifications/unread-count`,
      undefined,
      auth(GOOD_USER),
    );
    check(count.body.count === mentions + reactions, 'unread count differs from the good events', count.body);
    await eventually(
      'one email per good mention',
      () => smtp.mails.filter((m) => m.to.includes(GOOD_EMAIL)).length >= mentions,
      30_000,
      250,
    );
    // No email can still be on its way: every delivery is final in email-service's ledger and no queue
    // holds a message (a second email needs one or the other), so the count below is the final one.
    await eventually(
      'every email delivery final and every queue empty',
      async () => {
        const open = await sql<{ n: number }>(
          db.url,
          "SELECT count(*)::int AS n FROM email_deliveries WHERE state IN ('pending', 'sending')",
        );
        return open[0].n === 0 && [...(await queueDepths())].every(([, n]) => n === 0);
      },
      30_000,
      250,
    );
    check(
      smtp.mails.filter((m) => m.to.includes(GOOD_EMAIL)).length === mentions,
      'good mentions emailed other than once',
    );
    check((await inbox(VICTIM)).length === 0, "a bad message reached the victim's inbox");
    const strayMail = smtp.mails.filter((m) => !m.to.includes(GOOD_EMAIL));
    check(
      strayMail.length === 0,
      'a bad message caused an email',
      strayMail.map((m) => m.to),
    );

    const byDefect: Record<string, number> = {};
    for (const m of messages) byDefect[m.defect] = (byDefect[m.defect] ?? 0) + 1;
    figures.messages = {
      bad: MESSAGES,
      good: mentions + reactions,
      deadLettered: Object.fromEntries([...expected].map(([q, ns]) => [q, ns.length])),
      byDefect,
      publishMs: published - started,
      toAllDeadLetteredMs: deadLettered - started,
    };
    for (const app of Object.values(apps))
      check(app.proc.exitCode === null, `${app.name} exited`, app.output.slice(-20));
  },
  budgetMs(MESSAGES),
);

it(
  `${REQUESTS} bad HTTP requests all answer 4xx with a reason, never 5xx`,
  async () => {
    const started = Date.now();
    const ctx = { secret: SECRET, owner: OWNER, other: OTHER, ownerEmail: OWNER_EMAIL };
    const requests: BadRequest[] = Array.from({ length: REQUESTS }, (_, n) => badRequest(rng, canaries, ctx, n));
    const answers = await pool(requests, 8, (req) => send(apps[req.app].url, req));

    const byStatus: Record<string, number> = {};
    const wrong: Array<{
      req: Omit<BadRequest, 'body' | 'raw'> & { body?: string };
      status: number;
      body: string;
      transportError?: string;
    }> = [];
    answers.forEach((a, i) => {
      byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
      // Node's HTTP layer answers a request without Host itself (400, empty body) before the app sees it.
      const reasonOk = hasReason(a.body) || requests[i].category === 'raw:no-host';
      if (a.status < 400 || a.status > 499 || !reasonOk) {
        const { body, raw, ...req } = requests[i];
        wrong.push({
          req: { ...req, body: (raw ?? body)?.toString().slice(0, 300) },
          status: a.status,
          body: a.body.slice(0, 300),
          transportError: a.transportError,
        });
      }
    });
    const byCategory: Record<string, number> = {};
    for (const r of requests)
      byCategory[r.category.split(':').slice(0, 2).join(':')] =
        (byCategory[r.category.split(':').slice(0, 2).join(':')] ?? 0) + 1;
    figures.requests = {
      bad: REQUESTS,
      byStatus,
      byApp: countBy(requests.map((r) => r.app)),
      categories: Object.keys(byCategory).length,
      earlyCloseRetries: fuzzSend.earlyCloseRetries,
      staleSocketRetries: fuzzSend.staleSocketRetries,
      ms: Date.now() - started,
    };
    // Which ways of failing to prove an identity were sent (docs/SECURITY.md's principals, each token
    // form with one defect). A full-size run sends every one; a reduced one may miss a few.
    const authKinds = countBy(
      requests
        .map((r) => /^(?:auth|feed-auth|push-auth|rc-auth|api-auth):([^:]+)/.exec(r.category)?.[1])
        .filter((k): k is string => k !== undefined),
    );
    (figures.requests as Record<string, unknown>).authKinds = Object.keys(authKinds).length;
    const unsent = badAuthKinds({ service: 'reconciler' }).filter((k) => !(k in authKinds));
    if (REQUESTS >= 5_000)
      check(unsent.length === 0, `${unsent.length} kinds of bad authorization were never sent`, unsent);
    // One example per status and category, so every distinct failure shows.
    const examples = new Map(wrong.map((w) => [`${w.status} ${w.req.category}`, w]));
    check(
      wrong.length === 0,
      `${wrong.length} of ${REQUESTS} bad requests were not a 4xx with a reason (by status: ${JSON.stringify(byStatus)})`,
      [...examples.values()].slice(0, 12),
    );
    for (const app of Object.values(apps))
      check(app.proc.exitCode === null, `${app.name} exited`, app.output.slice(-20));
  },
  budgetMs(REQUESTS),
);

it('no PII canary appears in any log line of any app, and every app is still ready', async () => {
  const lines = Object.values(apps).flatMap((a) => a.output.join('').split('\n'));
  figures.logLines = lines.length;
  figures.canaries = { emails: canaries.emails.length, tokens: canaries.tokens.length };
  check(
    canaries.emails.length > 100 && canaries.tokens.length > 100,
    'too few canaries seeded to mean anything',
    figures.canaries,
  );
  const leaks = leakedCanaries(lines, canaries);
  // One example per kind of line (service and message), so every leaking site shows.
  const examples = new Map<string, { canary: string; line: string }>();
  for (const l of leaks) {
    const kind = /"service":"([^"]+)".*"msg":"([^"]{0,60})/.exec(l.line)?.slice(1).join(' / ') ?? l.line.slice(0, 80);
    if (!examples.has(kind)) examples.set(kind, { canary: l.canary, line: l.line.slice(0, 600) });
  }
  check(leaks.length === 0, `${leaks.length} canaries in the logs`, [...examples.values()]);
  // A crash-only app logs "fatal" before it exits; none may have come close.
  const fatal = lines.filter((l) => l.includes('"level":"fatal"') || /uncaught|unhandled rejection/i.test(l));
  check(fatal.length === 0, 'an app logged a fatal error', fatal.slice(0, 5));
  figures.errorLines = countBy(
    lines.filter((l) => l.includes('"level":"error"')).map((l) => /"service":"([^"]+)"/.exec(l)?.[1] ?? 'unknown'),
  );
  for (const app of Object.values(apps)) {
    check(app.proc.exitCode === null, `${app.name} exited`, app.output.slice(-20));
    check((await fetch(`${app.url}/readyz`)).status === 200, `${app.name} is not ready after the fuzz`);
  }
}, 60_000);

/** Messages (ready + unacked) of every queue in the vhost, exact (rabbitmqctl, not the lagging stats). */
async function queueDepths(): Promise<Map<string, number>> {
  const out = await rabbitmqctl('list_queues', '-q', '--no-table-headers', '-p', vhost.vhost, 'name', 'messages');
  return new Map(
    out
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((c) => c.length === 2)
      .map(([q, n]) => [q, Number(n)]),
  );
}

function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
