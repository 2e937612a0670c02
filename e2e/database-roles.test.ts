import pg from 'pg';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testOperators,
  testRedisPrefix,
  testResourceName,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { TestPushServer } from '../apps/push-service/test/support/push-server';
import { appsEnv, explainedBy, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * The apps as a deployment connects them to Postgres (docs/DEPLOY.md "Database roles"): each app as
 * a login user of its own, a member of its service's group role, never as the database owner. A
 * mention reaches the inbox, the mailbox and the browser subscribed to push (and /v1/admin/why explains it), a post reaches a follower's feed, and every scheduled job
 * of the reconciler (retention, counter repair, stuck work, feed checks: the cross-service grants)
 * completes a run after that traffic; none fails on a privilege. libs/db/test/roles.test.ts holds the
 * grant table statement by statement.
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
const SERVICES = [
  'notification-service',
  'email-service',
  'feed-service',
  'push-service',
  'reconciler',
  'demo-community-api',
] as const;
type Service = (typeof SERVICES)[number];
const OPERATORS = testOperators(['operator']);
const JOBS = [
  'counters.recount-recent',
  'counters.sweep',
  'retention.inbox',
  'retention.email',
  'retention.outbox',
  'retention.dlq',
  'retention.counter-repairs',
  'stuck-work',
  'feeds.check',
];

let vhost: TestVhost;
let db: TestDatabase;
let admin: pg.Client;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let pushServer: TestPushServer;
const apps: Partial<Record<Service, App>> = {};
const logins = new Map<Service, string>();

const quote = (name: string): string => `"${name.replace(/"/g, '""')}"`;

function urlAs(user: string): string {
  const url = new URL(db.url);
  url.username = encodeURIComponent(user);
  url.password = '';
  return url.toString();
}

function app(name: Service): App {
  const started = apps[name];
  if (!started) throw new Error(`${name} did not start`);
  return started;
}

beforeAll(async () => {
  [vhost, db, smtp, pushServer] = await Promise.all([
    createTestVhost('e2e-dbroles'),
    createTestDatabase('e2e_dbroles'),
    startSmtpSink(),
    new TestPushServer().start(),
  ]);
  admin = new pg.Client({ connectionString: db.url });
  admin.on('error', () => undefined);
  await admin.connect();
  // Roles are cluster-wide: this run's own login users, dropped in afterAll.
  for (const service of SERVICES) {
    const name = testResourceName(`dbr_${service.replace(/-/g, '_').slice(0, 12)}`, '_');
    await admin.query(`CREATE ROLE ${quote(name)} LOGIN IN ROLE ${quote(`community_${service.replace(/-/g, '_')}`)}`);
    logins.set(service, name);
  }
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
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
    FEED_REDIS_PREFIX: testRedisPrefix('e2e-dbroles'),
  };
  const as = (service: Service) => ({ ...env, DATABASE_URL: urlAs(logins.get(service) ?? '') });
  // notification-service first: its queues must exist before the first event is published.
  apps['notification-service'] = await startApp('notification-service', notifications, as('notification-service'));
  [apps['email-service'], apps['feed-service'], apps['push-service'], apps['demo-community-api'], apps.reconciler] =
    await Promise.all([
      startApp('email-service', email, as('email-service')),
      startApp('feed-service', feed, as('feed-service')),
      // The test's push service is plain http on 127.0.0.1.
      startApp('push-service', push, { ...as('push-service'), PUSH_ALLOW_INSECURE_LOCALHOST: 'true' }),
      startApp('demo-community-api', api, as('demo-community-api')),
      // Every job every 3 s, so each runs after the traffic below (a job's timeout is its interval).
      startApp('reconciler', reconciler, {
        ...as('reconciler'),
        RABBITMQ_MANAGEMENT_URL: '',
        ADMIN_KEYS: OPERATORS.adminKeys,
        BREAKER_METRICS_URLS: 'none',
        COUNTER_RECOUNT_INTERVAL_MS: '3000',
        COUNTER_SWEEP_INTERVAL_MS: '3000',
        RETENTION_INTERVAL_MS: '3000',
        STUCK_INTERVAL_MS: '3000',
        FEED_CHECK_INTERVAL_MS: '3000',
        FEED_CHECK_SETTLE_MS: '1000',
      }),
    ]);
}, 120_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp?.close();
  await pushServer?.close();
  // Before the database goes: dropping it disconnects this client too.
  for (const name of logins.values()) await admin.query(`DROP ROLE IF EXISTS ${quote(name)}`);
  await admin?.end();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

it(
  'each app works as its own login user: inbox, mailbox, feed, and every reconciler job',
  () =>
    explainedBy(Object.values(apps), async () => {
      const { rows: sessions } = await admin.query<{ usename: string }>(
        'SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1',
        [db.name],
      );
      expect(sessions.map((s) => s.usename)).toEqual(expect.arrayContaining([...logins.values()]));

      for (const [id, name] of [
        ['ada', 'Ada'],
        ['bob', 'Bob'],
      ]) {
        expect(
          (
            await http('POST', `${app('demo-community-api').url}/v1/users`, {
              id,
              email: `${id}@example.test`,
              displayName: name,
            })
          ).status,
        ).toBe(201);
      }
      expect(
        (await http('POST', `${app('demo-community-api').url}/v1/users/bob/follow`, undefined, { 'x-user-id': 'ada' }))
          .status,
      ).toBe(201);
      // The follow is projected before the post is published, or the post is not fanned out to ada.
      await eventually(
        'the follow projected by feed-service',
        async () =>
          (await admin.query(`SELECT 1 FROM feed_follows WHERE follower_id = 'ada' AND followee_id = 'bob' AND active`))
            .rowCount === 1,
        30_000,
      );
      // ada's browser subscribes to push (push-service's own tables, as its own login user).
      const browser = pushServer.subscribe();
      expect(
        (
          await http('POST', `${app('push-service').url}/v1/users/ada/push-subscriptions`, browser.json, {
            authorization: `Bearer ${jwt(SECRET, { sub: 'ada', iss: 'community-site', aud: 'community-notifications', exp: Math.floor(Date.now() / 1000) + 600 })}`,
          })
        ).status,
      ).toBe(201);
      const post = await http<{ id: string }>(
        'POST',
        `${app('demo-community-api').url}/v1/posts`,
        { title: 'Roles', body: 'Who owns what?' },
        { 'x-user-id': 'bob' },
      );
      expect(post.status).toBe(201);
      const comment = await http<{ id: string }>(
        'POST',
        `${app('demo-community-api').url}/v1/posts/${post.body.id}/comments`,
        { body: 'Ask @ada' },
        { 'x-user-id': 'bob' },
      );
      expect(comment.status).toBe(201);

      // A user token as the community site mints it (the defaults of JWT_ISSUER and JWT_AUDIENCE).
      const token = (sub: string) => ({
        authorization: `Bearer ${jwt(SECRET, { sub, iss: 'community-site', aud: 'community-notifications', exp: Math.floor(Date.now() / 1000) + 600 })}`,
      });
      await eventually(
        "the mention in ada's inbox",
        async () => {
          const inbox = await http<{ items: Array<{ type: string; resourceId: string }> }>(
            'GET',
            `${app('notification-service').url}/v1/users/ada/notifications?limit=10`,
            undefined,
            token('ada'),
          );
          if (inbox.status !== 200) throw new Error(`inbox answered ${inbox.status} ${JSON.stringify(inbox.body)}`);
          return inbox.body.items.some((n) => n.type === 'mention' && n.resourceId === comment.body.id);
        },
        30_000,
      );
      await eventually('an email to ada', () => smtp.mails.some((m) => m.to.includes('ada@example.test')), 30_000);
      // Mentions push by default (docs/PUSH.md): the payload, decrypted with the browser's keys, is the mention's.
      await eventually(
        "a push to ada's browser",
        () =>
          pushServer.for(browser).some((p) => {
            const shown = JSON.parse(p.plaintext) as { type: string; body: string };
            return shown.type === 'mention' && shown.body === 'Ask @ada';
          }),
        30_000,
      );
      expect(pushServer.refused).toEqual([]);
      await eventually(
        "bob's post in ada's feed",
        async () => {
          const feed = await http<{ items: Array<{ postId: string }> }>(
            'GET',
            `${app('feed-service').url}/v1/users/ada/feed?limit=10`,
            undefined,
            token('ada'),
          );
          return feed.status === 200 && feed.body.items.some((p) => p.postId === post.body.id);
        },
        30_000,
      );
      // /v1/admin/why reads the inbox, the outbox and the email ledger of the other services (SELECT grants).
      await eventually(
        'why: delivered',
        async () => {
          const why = await http<{ verdict: string }>(
            'GET',
            `${app('reconciler').url}/v1/admin/why?userId=ada&commentId=${comment.body.id}`,
            undefined,
            {
              authorization: `Bearer ${OPERATORS.token('operator', 'reconciler')}`,
            },
          );
          if (why.status !== 200) throw new Error(`why answered ${why.status} ${JSON.stringify(why.body)}`);
          return why.body.verdict === 'delivered';
        },
        30_000,
      );
      // email-service recorded its retention horizon at start (its own table; the reconciler reads it).
      expect((await admin.query(`SELECT set_by FROM retention_horizons WHERE name = 'email'`)).rows).toEqual([
        { set_by: 'email-service' },
      ]);

      const since = new Date();
      const runs = await eventually(
        'a succeeded run of every job after the traffic',
        async () => {
          const { rows } = await admin.query<{
            job: string;
            outcome: string;
            error: string | null;
            counts: Record<string, number>;
          }>('SELECT job, outcome::text, error, counts FROM scheduled_job_runs WHERE started_at > $1 ORDER BY id', [
            since,
          ]);
          const succeeded = new Set(
            rows
              .filter((r) => r.outcome === 'succeeded' && (r.job !== 'feeds.check' || r.counts.checked >= 1))
              .map((r) => r.job),
          );
          const missing = JOBS.filter((j) => !succeeded.has(j));
          if (missing.length === 0) return rows;
          // Shown if the wait times out: what has not succeeded yet, and why runs failed.
          const failures = rows.filter((r) => r.error).map((r) => `${r.job}: ${r.error}`);
          throw new Error(
            `not yet succeeded: ${missing.join(', ')}; failed runs: ${[...new Set(failures)].join(' | ') || 'none'}`,
          );
        },
        60_000,
      );
      // A run may time out on a loaded machine (its timeout is its 3-s interval); none may be refused.
      const { rows: refused } = await admin.query(
        `SELECT job, error FROM scheduled_job_runs WHERE error ~* 'permission denied|must be owner'`,
      );
      expect(refused).toEqual([]);
      expect(runs.length).toBeGreaterThanOrEqual(JOBS.length);
      const logs = Object.values(apps).flatMap((a) =>
        a.output
          .join('')
          .split('\n')
          .filter((l) => /permission denied|42501/.test(l))
          .map((l) => `${a.name}: ${l}`),
      );
      expect(logs).toEqual([]);
    }),
  240_000,
);
