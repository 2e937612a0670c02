import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import pg from 'pg';
import { createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost } from '@community/testing';
import { appsEnv, explainedBy, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * notification-service emits notification.created without an outbox (docs/NOTIFICATIONS.md
 * "Emission"): commit the batch, publish with confirms, then ack the sources. Here the process is
 * killed with SIGKILL, for real, at each step of that sequence (FAULT_CRASH_AT makes it kill
 * itself exactly there), and restarted. At every point, each mentioned user must end with the
 * notification in the inbox, counted once, and exactly one email.
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};
let env: Record<string, string>;
let observer: pg.Client;

beforeAll(async () => {
  [vhost, db, smtp] = await Promise.all([
    createTestVhost('emitcrash'),
    createTestDatabase('emitcrash'),
    startSmtpSink(),
  ]);
  const [api, notifications, email] = await Promise.all([freePort(), freePort(), freePort()]);
  env = {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
    // Mentions published together share one batch (one lane, a wait long enough to collect them):
    // the crash then falls between the steps of a batch that holds all of them.
    CONSUMER_BATCH_WAIT_MS: '300',
    CONSUMER_BATCH_CONCURRENCY: '1',
  };
  // notification-service first: its queues must exist before the first event is published.
  apps.notifications = await startApp('notification-service', notifications, env);
  const { JWT_SECRET: _notForEmail, ...emailEnv } = env;
  [apps.email, apps.api] = await Promise.all([
    startApp('email-service', email, emailEnv),
    startApp('demo-community-api', api, env),
  ]);
  observer = new pg.Client({ connectionString: db.url, application_name: 'emission-crash-test' });
  await observer.connect();
}, 120_000);

afterAll(async () => {
  await observer?.end();
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp.close();
  await Promise.all([vhost.delete(), db.drop()]);
});

const inbox = async (userId: string) =>
  (
    await http<{ items: Array<{ type: string; resourceId: string }> }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications?limit=100`,
      undefined,
      { authorization: `Bearer ${jwt(SECRET, { sub: userId })}` },
    )
  ).body.items;

const unread = async (userId: string) =>
  (
    await http<{ count: number }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications/unread-count`,
      undefined,
      { authorization: `Bearer ${jwt(SECRET, { sub: userId })}` },
    )
  ).body.count;

const mailsTo = (userId: string) => smtp.mails.filter((m) => m.to.includes(`${userId}@example.test`));

async function createUser(id: string): Promise<void> {
  const res = await http('POST', `${apps.api.url}/v1/users`, { id, email: `${id}@example.test`, displayName: id });
  expect(res.status).toBe(201);
}

/** Messages in a queue and its retry tiers (ready + unacked). */
async function pending(queue: string): Promise<number> {
  return (await vhost.depth(queue)).total;
}

describe.each(['after-commit', 'after-some-confirms', 'after-confirms'] as const)('SIGKILL %s', (point) => {
  it('loses no notification and sends no email twice', async () => {
    await explainedBy(Object.values(apps), async () => {
      const tag = randomUUID().slice(0, 6);
      const author = `author-${tag}`;
      const mentioned = [1, 2, 3, 4].map((i) => `m${i}-${tag}`);
      for (const id of [author, ...mentioned]) await createUser(id);
      const post = await http<{ id: string }>(
        'POST',
        `${apps.api.url}/v1/posts`,
        { title: `Crash ${point}`, body: 'Where does it die?' },
        { 'x-user-id': author },
      );
      expect(post.status).toBe(201);
      // Their user.upserted reached email-service before the mentions do (it needs the addresses).
      await eventually('the users projected by email-service', async () => {
        const { rows } = await observer.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM email_users WHERE user_id = ANY ($1)',
          [mentioned],
        );
        return rows[0].n === mentioned.length;
      });

      // The service that will die at `point` of the next batch with something to emit.
      await stopApp(apps.notifications);
      apps.notifications = await startApp('notification-service', apps.notifications.port, {
        ...env,
        FAULT_CRASH_AT: point,
      });
      const exited = once(apps.notifications.proc, 'exit');
      const comment = await http<{ id: string }>(
        'POST',
        `${apps.api.url}/v1/posts/${post.body.id}/comments`,
        { body: mentioned.map((u) => `@${u}`).join(' ') + ' have a look' },
        { 'x-user-id': author },
      );
      expect(comment.status).toBe(201);
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' });

      // Every crash point is after the commit: the rows are there, each once.
      const rows = await observer.query<{ user_id: string; n: number }>(
        `SELECT user_id, count(*)::int AS n FROM notification_items
         WHERE type = 'mention' AND resource_id = $1 GROUP BY 1 ORDER BY 1`,
        [comment.body.id],
      );
      expect(rows.rows).toEqual(
        mentioned.map((user_id) => ({ user_id, n: 1 })).sort((a, b) => (a.user_id < b.user_id ? -1 : 1)),
      );

      // Restarted: the unacked sources come back as duplicates, which re-emit from the rows.
      apps.notifications = await startApp('notification-service', apps.notifications.port, env);
      await eventually(
        'a mention email to each mentioned user',
        async () => mentioned.every((u) => mailsTo(u).some((m) => /mention/i.test(m.subject ?? ''))),
        60_000,
        100,
      );
      // Everything redelivered has been handled: nothing left to make a second email later.
      await eventually(
        'the notification and email queues drained',
        async () =>
          (await pending('notification-service.critical')) === 0 &&
          (await pending('notification-service.standard')) === 0 &&
          (await pending('email-service.send')) === 0,
        60_000,
        200,
      );
      for (const u of mentioned) {
        expect(mailsTo(u)).toHaveLength(1);
        expect((await inbox(u)).filter((n) => n.type === 'mention' && n.resourceId === comment.body.id)).toHaveLength(
          1,
        );
        expect(await unread(u)).toBe(1);
      }
    });
  }, 180_000);
});
