// A real Prometheus (the Debian package's binary) scrapes the running stack under traffic: the apps
// as processes (as `npm start` runs them) on a test vhost and database, and the broker's
// rabbitmq_prometheus endpoints, with the committed infra/prometheus/prometheus.yml (targets moved
// to 127.0.0.1, the scrape interval shortened). Then every dashboard panel's query must parse and
// return data (waited for: a rate needs two scrapes in its window), unless it is on the allow-list below with the reason it may be empty on a healthy
// system; and every alert rule must load and evaluate without error against the real series.
// Then the query of each KEDA age trigger (infra/k8s/base/apps/<worker>.yaml) is run against the
// same Prometheus: a sample above 0 while its queues hold work, a 0 (not nothing) while they hold
// none, and nothing at all when the series it reads are not there (the apps not scraped); the
// prod overlay's version (limited to its namespace, a label the apps' jobs get here) likewise.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { EVENTS_EXCHANGE, RECONCILER_RECOUNT_TYPE } from '@community/contracts';
import { createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost } from '@community/testing';
import { freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from '../../../e2e/harness';
import { panelQueries, substituteVariables, type PanelQuery } from '../src/index';

const ROOT = path.resolve(__dirname, '../../..');
// The window each panel query covers, as a dashboard's "last minute" would.
const WINDOW_SECONDS = 60;
const SCRAPE_INTERVAL = '2s';
// Grafana's $__rate_interval is max(4 × scrape interval, step + scrape interval).
const RATE_INTERVAL = '10s';
const RABBITMQ_PROMETHEUS = process.env.RABBITMQ_PROMETHEUS_TARGET ?? '127.0.0.1:15692';
const SECRET = 'scrape-secret-scrape-secret-scrape-123';
/** infra/k8s/overlays/prod/kustomization.yaml's namespace; the dev overlay's is another. */
const PROD_NAMESPACE = 'community';

// The runnable services: an app folder with its entry point (a folder may exist before its service
// does, e.g. apps/reconciler with only its DLQ module).
const APPS = readdirSync(path.join(ROOT, 'apps'))
  .filter((app) => existsSync(path.join(ROOT, 'apps', app, 'src/main.ts')))
  .sort();
const absent = (app: string) => !APPS.includes(app);

/**
 * Panel queries that may return nothing on a healthy system, each with the reason. Matched against
 * the expression; an entry that applies must match at least one panel query (no stale entries).
 * The feed-service and reconciler entries apply only while those apps are not in apps/ (they are
 * being built in parallel); once they are, their series must show up like every other.
 */
const MAY_BE_EMPTY: Array<{ pattern: RegExp; reason: string; applies: boolean }> = [
  {
    pattern: /messaging_failed_total/,
    reason: 'no handler fails on a healthy run (a labelled counter has no series before its first increment)',
    applies: true,
  },
  { pattern: /messaging_retried_total/, reason: 'no message is retried on a healthy run', applies: true },
  { pattern: /messaging_dead_lettered_total/, reason: 'nothing is dead-lettered on a healthy run', applies: true },
  {
    pattern: /reconciler_watchdog_findings/,
    reason: 'a finding is 1 only while the watchdog reports a queue; none on a healthy run',
    applies: true,
  },
  {
    pattern: /reconciler_dlq_ingested_total/,
    reason:
      'nothing is dead-lettered on a healthy run, so the console ingests nothing (labelled by DLQ: no series before the first message)',
    applies: !absent('reconciler'),
  },
  {
    pattern: /reconciler_dlq_actions_total/,
    reason:
      'no operator replays or discards on a healthy run (labelled by action and outcome: no series before the first action)',
    applies: !absent('reconciler'),
  },
  {
    pattern: /feed_/,
    reason: 'feed-service (feed_* series) is not in apps/ yet (no apps/feed-service/src/main.ts)',
    applies: absent('feed-service'),
  },
  {
    pattern: /reconciler_/,
    reason: 'the reconciler service (reconciler_* series) is not in apps/ yet (no apps/reconciler/src/main.ts)',
    applies: absent('reconciler'),
  },
].filter((a) => a.applies);

interface PromResult {
  status: string;
  error?: string;
  data: {
    resultType: string;
    result: Array<{ metric: Record<string, string>; values?: unknown[][]; value?: unknown[] }>;
  };
}

let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};
let prometheus: ChildProcess | undefined;
let prometheusOutput = '';
let promUrl: string;
let tmp: string;

async function prom(pathAndQuery: string): Promise<PromResult> {
  const res = await fetch(`${promUrl}${pathAndQuery}`);
  return (await res.json()) as PromResult;
}

/** The committed scrape config, pointed at this test's processes. */
function testConfig(ports: Record<string, number>): string {
  const config = parse(readFileSync(path.join(ROOT, 'infra/prometheus/prometheus.yml'), 'utf8')) as {
    global: Record<string, unknown>;
    rule_files: string[];
    alerting?: unknown;
    scrape_configs: Array<{
      job_name: string;
      params?: Record<string, string[]>;
      static_configs: Array<{ targets: string[]; labels?: Record<string, string> }>;
    }>;
  };
  config.global.scrape_interval = SCRAPE_INTERVAL;
  config.global.scrape_timeout = SCRAPE_INTERVAL;
  config.global.evaluation_interval = SCRAPE_INTERVAL;
  config.rule_files = config.rule_files.map((f) =>
    f.replace('/etc/prometheus/rules/', path.join(ROOT, 'infra/prometheus/rules/')),
  );
  delete config.alerting; // no Alertmanager here: rules are evaluated, notifications are not sent
  const jobs = [];
  for (const job of config.scrape_configs) {
    if (job.job_name.startsWith('rabbitmq')) {
      job.static_configs = [{ targets: [RABBITMQ_PROMETHEUS] }];
      // Only this test's vhost: the shared broker holds every other test's queues too.
      if (job.params) job.params.vhost = [vhost.vhost];
      jobs.push(job);
    } else if (ports[job.job_name]) {
      // The label the Prometheus Operator gives every series of a namespace: the overlays' KEDA
      // queries select on it (here the prod overlay's namespace).
      job.static_configs = [{ targets: [`127.0.0.1:${ports[job.job_name]}`], labels: { namespace: PROD_NAMESPACE } }];
      jobs.push(job);
    } // services not in apps/ yet (feed-service, reconciler) are left out: see MAY_BE_EMPTY
  }
  config.scrape_configs = jobs;
  return stringify(config);
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'scrape-test-'));
  [vhost, db, smtp] = await Promise.all([createTestVhost('scrape'), createTestDatabase('scrape'), startSmtpSink()]);
  const ports: Record<string, number> = {};
  for (const app of APPS) ports[app] = await freePort();
  const env = {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    JWT_SECRET: SECRET,
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    SMTP_RATE_PER_SECOND: '0',
    NOTIFICATION_SERVICE_URL: `http://127.0.0.1:${ports['notification-service']}`,
    UNSUBSCRIBE_BASE_URL: `http://127.0.0.1:${ports['email-service']}`,
    DEMO_TRAFFIC_RATE: '0',
    // feed-service and the reconciler, when present: their own Redis keys, the test's email-service
    // breaker, and jobs frequent enough to run within seconds of the start.
    FEED_REDIS_PREFIX: `${vhost.vhost}:feed:`,
    BREAKER_METRICS_URLS: `http://127.0.0.1:${ports['email-service']}/metrics`,
    COUNTER_RECOUNT_INTERVAL_MS: '5000',
    STUCK_INTERVAL_MS: '5000',
    FEED_CHECK_INTERVAL_MS: '5000',
    WATCHDOG_INTERVAL_MS: '5000',
  };
  // notification-service first: its queues must exist before the first event is published.
  apps['notification-service'] = await startApp('notification-service', ports['notification-service'], env);
  await Promise.all(
    APPS.filter((a) => a !== 'notification-service').map(async (a) => (apps[a] = await startApp(a, ports[a], env))),
  );

  const promPort = await freePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  writeFileSync(path.join(tmp, 'prometheus.yml'), testConfig(ports));
  prometheus = spawn(
    process.env.PROMETHEUS_BIN ?? 'prometheus',
    [
      `--config.file=${path.join(tmp, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(tmp, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--storage.tsdb.retention.time=1h',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout!.on('data', (c: Buffer) => (prometheusOutput += c.toString()));
  prometheus.stderr!.on('data', (c: Buffer) => (prometheusOutput += c.toString()));
  await eventually(
    'prometheus ready',
    async () => {
      if (prometheus!.exitCode !== null)
        throw new Error(`prometheus exited ${prometheus!.exitCode}: ${prometheusOutput.slice(-2000)}`);
      return (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.status === 200;
    },
    20_000,
    200,
  );
}, 90_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM');
    await new Promise((resolve) => prometheus!.once('exit', resolve));
  }
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Whether traffic() has created its users (the first round, of whichever test runs first). */
let seeded = false;

/** A little of everything the demo API does: users, a post, follows, comments with mentions, reactions. */
async function traffic(round: number): Promise<void> {
  const api = apps['demo-community-api'].url;
  const users = ['ada', 'bob', 'cy'];
  if (!seeded) {
    seeded = true;
    for (const id of users)
      expect((await http('POST', `${api}/v1/users`, { id, email: `${id}@example.test`, displayName: id })).status).toBe(
        201,
      );
    expect((await http('POST', `${api}/v1/users/ada/follow`, undefined, { 'x-user-id': 'bob' })).status).toBeLessThan(
      300,
    );
  }
  const post = await http<{ id: string }>(
    'POST',
    `${api}/v1/posts`,
    { title: `Round ${round}`, body: 'Queues and retries' },
    { 'x-user-id': 'ada' },
  );
  expect(post.status).toBe(201);
  const comment = await http<{ id: string }>(
    'POST',
    `${api}/v1/posts/${post.body.id}/comments`,
    { body: `@bob and @cy, round ${round}` },
    { 'x-user-id': 'ada' },
  );
  expect(comment.status).toBe(201);
  const reaction = await http(
    'POST',
    `${api}/v1/reactions`,
    { targetType: 'comment', targetId: comment.body.id, emoji: '👍' },
    { 'x-user-id': 'bob' },
  );
  expect(reaction.status).toBeLessThan(300);
  if (apps['feed-service']) {
    // Feed reads, so the cache series have something to count.
    const feed = await http('GET', `${apps['feed-service'].url}/v1/users/bob/feed?limit=20`, undefined, {
      authorization: `Bearer ${jwt(SECRET, { sub: 'bob' })}`,
    });
    expect(feed.status).toBe(200);
  }
}

it('every dashboard query parses and returns data once the stack has served traffic, and every alert rule evaluates', async () => {
  // Traffic goes on in the background until the checks below are done, so that rates are non-zero in
  // the windows they query. Nothing waits a fixed time: each check waits for its own condition.
  let stop = false;
  const load = (async () => {
    for (let round = 0; !stop; round++) {
      await traffic(round);
      await new Promise((r) => setTimeout(r, 2_000)); // the pace of the traffic, not a wait for a result
    }
  })();
  try {
    await checkEverything();
  } finally {
    stop = true;
    await load;
  }
}, 240_000);

/**
 * Each ScaledObject's age-trigger query as committed: in the kustomize base (no namespace), or in an
 * overlay's generated patch (the same query limited to the overlay's namespace).
 */
function kedaAgeQueries(where: 'base' | 'dev' | 'prod'): Map<string, string> {
  const files =
    where === 'base'
      ? APPS.map((app) => path.join(ROOT, 'infra/k8s/base/apps', `${app}.yaml`))
      : [path.join(ROOT, 'infra/k8s/overlays', where, 'keda-age-queries.yaml')];
  const out = new Map<string, string>();
  for (const file of files.filter((f) => existsSync(f))) {
    for (const scaled of parseAllDocuments(readFileSync(file, 'utf8'))
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      .map((d) => d.toJS() as any)
      .filter((d) => d?.kind === 'ScaledObject')) {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const trigger = scaled.spec.triggers.find((t: any) => t.type === 'prometheus');
      if (trigger) out.set(scaled.metadata.name as string, trigger.metadata.query as string);
    }
  }
  return out;
}

/** What KEDA would read: the instant query's samples (KEDA takes the single sample's value). */
async function kedaValue(query: string): Promise<number[]> {
  const res = await prom(`/api/v1/query?${new URLSearchParams({ query })}`);
  if (res.status !== 'success') throw new Error(`${query}: ${res.error}`);
  return res.data.result.map((s) => Number(s.value![1]));
}

it('each KEDA age trigger query answers above 0 while its queues hold work, 0 while they hold none, and nothing when the apps are not scraped', async () => {
  const queries = kedaAgeQueries('base');
  const prodQueries = kedaAgeQueries('prod');
  expect([...queries.keys()].sort()).toEqual([
    'email-service',
    'feed-service',
    'notification-service',
    'push-service',
    'reconciler',
  ]);
  expect([...prodQueries.keys()].sort()).toEqual([...queries.keys()].sort());

  // Nothing has been published to reconciler.low-priority yet: its query reads 0, from the
  // reconciler's own sample of the queue, once the reconciler has been scraped.
  await eventually(
    'the reconciler age query reads 0 with no work',
    async () => (await kedaValue(queries.get('reconciler')!)).join() === '0',
    60_000,
    1000,
  );
  expect(await kedaValue(prodQueries.get('reconciler')!)).toEqual([0]);

  // Work for every worker while the queries are read, in the background: traffic rounds
  // (mentions, emails, feed activity) and recount requests on reconciler.low-priority, published as
  // the reconciler's admin route does (one batch each; user-id its broker user, here the test's,
  // which every app shares), a burst per round, faster than it works them one at a time. Rounds go
  // on because a rate needs increments after a series first appears: one burst is not enough.
  const conn = await amqplib.connect(vhost.url);
  const ch = await conn.createConfirmChannel();
  const recounts = async (round: number) => {
    for (let i = 0; i < 10; i++) {
      const now = new Date();
      const id = `scrape-recount-${round}-${i}`;
      const body = {
        id,
        type: RECONCILER_RECOUNT_TYPE,
        version: 1,
        occurredAt: now.toISOString(),
        correlationId: 'scrape-keda',
        data: { after: '', through: 'zzzz', requestedBy: 'scrape-test' },
      };
      ch.publish(EVENTS_EXCHANGE, RECONCILER_RECOUNT_TYPE, Buffer.from(JSON.stringify(body)), {
        persistent: true,
        mandatory: true,
        contentType: 'application/json',
        messageId: id,
        type: RECONCILER_RECOUNT_TYPE,
        timestamp: Math.floor(now.getTime() / 1000),
        correlationId: 'scrape-keda',
        userId: decodeURIComponent(new URL(vhost.url).username),
        headers: { 'x-schema-version': 1 },
      });
    }
    await ch.waitForConfirms();
  };
  let stop = false;
  const load = (async () => {
    for (let round = 1000; !stop; round++) {
      await Promise.all([traffic(round), recounts(round)]);
      await new Promise((r) => setTimeout(r, 2_000)); // the pace of the traffic, not a wait for a result
    }
  })();
  let values: Record<string, number[]> = {};
  try {
    await eventually(
      'every age query above 0 while its queues have work',
      async () => {
        values = {};
        for (const [app, query] of queries) values[app] = await kedaValue(query);
        for (const [app, query] of prodQueries) values[`${app} (prod overlay)`] = await kedaValue(query);
        return Object.values(values).every((v) => v.length === 1 && v[0] > 0);
      },
      90_000,
      2000,
    ).catch(() => undefined);
  } finally {
    stop = true;
    await load;
    await conn.close();
  }
  expect(
    Object.fromEntries(Object.entries(values).map(([app, v]) => [app, v.length === 1 && v[0] > 0 ? 'above 0' : v])),
  ).toEqual(
    Object.fromEntries(
      [...queries.keys()].flatMap((app) => [
        [app, 'above 0'],
        [`${app} (prod overlay)`, 'above 0'],
      ]),
    ),
  );
  // The dev overlay's queries read the dev namespace's series: none here (prod's, as labelled above).
  for (const [app, query] of kedaAgeQueries('dev'))
    expect({ app, samples: await kedaValue(query) }).toEqual({ app, samples: [] });
  // The reconciler worked them (not dead-lettered: a rejected message is no work done).
  expect(await vhost.depth('reconciler.low-priority.dlq')).toMatchObject({ total: 0 });

  // Not hidden: with the series it reads absent (here: renamed, as if nothing scraped the apps) the
  // query returns no sample, which KEDA with ignoreNullValues "false" reports as an error.
  for (const [app, query] of queries)
    expect({ app, samples: await kedaValue(query.replaceAll('messaging_', 'unscraped_messaging_')) }).toEqual({
      app,
      samples: [],
    });
}, 180_000);

async function checkEverything(): Promise<void> {
  await eventually('mention emails sent', () => smtp.mails.length > 0, 60_000).catch((err: Error) => {
    throw new Error(
      `${err.message}\n${Object.values(apps)
        .map((a) => `--- ${a.name}\n${a.output.join('').slice(-1500)}`)
        .join('\n')}`,
    );
  });

  // Every target was scraped, the apps' and both broker endpoints.
  await eventually(
    'every target scraped and up',
    async () => {
      const targets = (await (await fetch(`${promUrl}/api/v1/targets`)).json()) as {
        data: { activeTargets: Array<{ labels: { job: string }; health: string; lastError: string }> };
      };
      expect(targets.data.activeTargets.map((t) => [t.labels.job, t.health, t.lastError]).sort()).toEqual(
        [...APPS, 'rabbitmq', 'rabbitmq-detailed'].sort().map((job) => [job, 'up', '']),
      );
      return true;
    },
    60_000,
    1000,
  );

  // Every panel query, as Grafana sends it over the last minute (range query, "All" selected), until
  // each returns data: a rate needs two scrapes inside its window, a scheduled job's series its first run.
  const dashboards = readdirSync(path.join(ROOT, 'infra/grafana/dashboards')).map((f) =>
    JSON.parse(readFileSync(path.join(ROOT, 'infra/grafana/dashboards', f), 'utf8')),
  );
  const queries: PanelQuery[] = dashboards.flatMap((d) => panelQueries(d));
  expect(queries.length).toBeGreaterThan(40);
  let problems: string[] = [];
  let allowedEmpty = new Set<RegExp>();
  await eventually(
    'every panel query returns data',
    async () => {
      const end = Date.now() / 1000;
      problems = [];
      allowedEmpty = new Set<RegExp>();
      for (const q of queries) {
        const expr = substituteVariables(q.expr, RATE_INTERVAL);
        const res = await prom(
          `/api/v1/query_range?${new URLSearchParams({ query: expr, start: String(end - WINDOW_SECONDS), end: String(end), step: '5' })}`,
        );
        const where = `${q.dashboard} / ${q.panel} / ${q.refId}: ${expr}`;
        if (res.status !== 'success') {
          problems.push(`${where}\n    error: ${res.error}`);
          continue;
        }
        const hasData = res.data.result.some((s) => (s.values ?? []).length > 0);
        const allowed = MAY_BE_EMPTY.find((a) => a.pattern.test(q.expr));
        if (allowed) allowedEmpty.add(allowed.pattern);
        else if (!hasData) problems.push(`${where}\n    returned no data`);
      }
      return problems.length === 0;
    },
    150_000,
    3000,
  ).catch(() => undefined);
  expect(problems).toEqual([]);
  expect(MAY_BE_EMPTY.filter((a) => !allowedEmpty.has(a.pattern)).map((a) => String(a.pattern))).toEqual([]); // no stale entries

  // Per-queue series of this test's vhost reached the RabbitMQ dashboard's queries.
  const depth = await prom(
    `/api/v1/query?${new URLSearchParams({ query: `rabbitmq_detailed_queue_messages{vhost="${vhost.vhost}"}` })}`,
  );
  expect(depth.data.result.map((s) => s.metric.queue)).toEqual(
    expect.arrayContaining(['notification-service.critical', 'email-service.send', 'email-service.send.dlq']),
  );

  // The rules file, loaded by this Prometheus: every rule evaluated against the scraped series
  // without an error (health "ok"), after at least one evaluation.
  const ruleFile = parse(readFileSync(path.join(ROOT, 'infra/prometheus/rules/community.rules.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  const ruleCount = ruleFile.groups.flatMap((g) => g.rules).length;
  await eventually(
    'every rule evaluated',
    async () => {
      const res = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
        data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
      };
      const rules = res.data.groups.flatMap((g) => g.rules);
      const bad = rules.filter((r) => r.health !== 'ok');
      if (rules.length === ruleCount && bad.length === 0) return true;
      throw new Error(
        `${rules.length} rules, not ok: ${bad.map((r) => `${r.name} ${r.health} ${r.lastError ?? ''}`).join('; ')}`,
      );
    },
    15_000,
    1000,
  );
  // And each alert expression, queried directly, parses and runs against the real data.
  for (const rule of ruleFile.groups.flatMap((g) => g.rules)) {
    const res = await prom(`/api/v1/query?${new URLSearchParams({ query: rule.expr })}`);
    expect({ alert: rule.alert, status: res.status, error: res.error }).toEqual({
      alert: rule.alert,
      status: 'success',
      error: undefined,
    });
  }
  // A healthy stack: no service is down.
  const down = await prom(
    `/api/v1/query?${new URLSearchParams({ query: 'ALERTS{alertname="CommunityServiceDown"}' })}`,
  );
  expect(down.data.result).toEqual([]);
}
