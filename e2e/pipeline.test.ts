import pg from 'pg';
import { createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost } from '@community/testing';
import { appsEnv, freePort, http, jwt, startApp, startSmtpSink, stopApp, type App } from './harness';

/**
 * The whole path, as a user of the community would notice it: a comment with a mention in the
 * community API → an in-app notification in the inbox API → one email. Then the notification
 * service is killed with SIGKILL in the middle of a batch, and restarted: nothing lost, nothing twice.
 */
const SECRET = 'e2e-secret-e2e-secret-e2e-secret-123';
let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
const apps: Record<string, App> = {};
let env: Record<string, string>;

beforeAll(async () => {
  [vhost, db, smtp] = await Promise.all([createTestVhost('e2e'), createTestDatabase('e2e'), startSmtpSink()]);
  const [api, notifications, email] = await Promise.all([freePort(), freePort(), freePort()]);
  env = {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    ...appsEnv({ secret: SECRET, smtpPort: smtp.port, notificationsPort: notifications, emailPort: email }),
  };
  // notification-service first: its queues must exist before the first event is published.
  apps.notifications = await startApp('notification-service', notifications, env);
  // email-service signs nothing with JWT_SECRET (its opt-out calls carry its own Ed25519 service
  // tokens, the local default key pair here): it starts without it.
  const { JWT_SECRET: _notForEmail, ...emailEnv } = env;
  [apps.email, apps.api] = await Promise.all([
    startApp('email-service', email, emailEnv),
    startApp('demo-community-api', api, env),
  ]);
}, 90_000);

afterAll(async () => {
  await Promise.all(Object.values(apps).map((a) => stopApp(a)));
  await smtp.close();
  await Promise.all([vhost.delete(), db.drop()]);
});

const inbox = async (userId: string) =>
  (
    await http<{ items: Array<{ type: string; actorId: string; resourceId: string }> }>(
      'GET',
      `${apps.notifications.url}/v1/users/${userId}/notifications?limit=100`,
      undefined,
      {
        authorization: `Bearer ${jwt(SECRET, { sub: userId })}`,
      },
    )
  ).body.items;

async function comment(postId: string, authorId: string, body: string): Promise<string> {
  const res = await http<{ id: string }>(
    'POST',
    `${apps.api.url}/v1/posts/${postId}/comments`,
    { body },
    { 'x-user-id': authorId },
  );
  expect(res.status).toBe(201);
  return res.body.id;
}

it('a mention reaches the inbox and the mailbox once, and survives a SIGKILL of the notification service', async () => {
  for (const [id, name] of [
    ['ada', 'Ada'],
    ['bob', 'Bob'],
    ['cy', 'Cy'],
  ]) {
    expect(
      (await http('POST', `${apps.api.url}/v1/users`, { id, email: `${id}@example.test`, displayName: name })).status,
    ).toBe(201);
  }
  const post = await http<{ id: string }>(
    'POST',
    `${apps.api.url}/v1/posts`,
    { title: 'Queues', body: 'How do you retry?' },
    { 'x-user-id': 'cy' },
  );
  const first = await comment(post.body.id, 'bob', 'Good question, @ada knows');

  await eventually("the mention in ada's inbox", async () =>
    (await inbox('ada')).some((n) => n.type === 'mention' && n.resourceId === first),
  );
  await eventually('one email to ada', () => smtp.mails.some((m) => m.to.includes('ada@example.test')), 30_000);

  // Fault: the notification service dies in the middle of a batch, without a chance to commit, ack
  // or drain. To have a batch provably open at the kill, this test holds ada's counter row (the
  // per-user lock every batch with a mention of ada takes in its claim + lock statement) while the
  // next comments come: their batch begins, claims, and waits on the lock, its messages unacked.
  const observer = new pg.Client({ connectionString: db.url, application_name: 'pipeline-test' });
  observer.on('error', () => undefined);
  await observer.connect();
  const holder = new pg.Client({ connectionString: db.url, application_name: 'pipeline-test-lock' });
  holder.on('error', () => undefined);
  await holder.connect();
  await holder.query('BEGIN');
  expect((await holder.query("SELECT 1 FROM notification_counters WHERE user_id = 'ada' FOR UPDATE")).rowCount).toBe(1);
  const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const during: string[] = [];
  for (let i = 0; i < 5; i++) during.push(await comment(post.body.id, 'cy', `@ada and @bob, round ${i}`));

  // The service's batch transactions waiting on the test's lock, by pid and transaction start.
  const blockedBatches = async () =>
    (
      await observer.query<{ pid: number; xact: string; age_s: number }>(
        `SELECT a.pid, a.xact_start::text AS xact, extract(epoch FROM now() - a.xact_start)::float AS age_s
       FROM pg_stat_activity a
       WHERE a.datname = current_database() AND a.application_name = 'notification-service'
         AND a.wait_event_type = 'Lock' AND a.query LIKE 'WITH claimed AS%'
         AND $1 = ANY (pg_blocking_pids(a.pid))`,
        [holderPid],
      )
    ).rows;
  // Open batch, seen from both sides: the broker holds messages of the critical queue unacked by
  // the consumer, and PostgreSQL shows the batch's transaction inside its claim + lock statement.
  // (A batch past its 9 s transaction budget is cancelled and retried: the check picks one young
  // enough that it is still open a moment later, at the kill.)
  let open: Array<{ pid: number; xact: string }> = [];
  const unacked = await eventually(
    'a batch of the critical queue open and unacked',
    async () => {
      const { unacked } = await vhost.depth('notification-service.critical');
      open = (await blockedBatches()).filter((b) => b.age_s < 5);
      return unacked > 0 && open.length > 0 && unacked;
    },
    60_000,
    200,
  );
  expect(unacked).toBeGreaterThan(0);
  expect(await stopApp(apps.notifications, 'SIGKILL')).toBe('SIGKILL');
  // The same transaction is still there after the kill (its backend has not noticed yet: it waits
  // on the lock): the batch was open at the moment of the kill, nothing of it committed.
  const after = await blockedBatches();
  expect(after.some((b) => open.some((o) => o.pid === b.pid && o.xact === b.xact))).toBe(true);
  expect(
    Number(
      (
        await observer.query(
          "SELECT count(*) FROM notification_items WHERE user_id = 'ada' AND type = 'mention' AND resource_id = ANY ($1)",
          [during],
        )
      ).rows[0].count,
    ),
  ).toBe(0);
  // Release the lock: the orphaned transaction finishes its statement, finds its client gone and
  // rolls back. The restarted service gets the requeued messages again.
  await holder.query('ROLLBACK');
  await holder.end();
  apps.notifications = await startApp('notification-service', apps.notifications.port, env);

  await eventually(
    'every mention delivered after the restart',
    async () => {
      const [ada, bob] = [await inbox('ada'), await inbox('bob')];
      return during.every(
        (c) =>
          ada.some((n) => n.type === 'mention' && n.resourceId === c) &&
          bob.some((n) => n.type === 'mention' && n.resourceId === c),
      );
    },
    60_000,
  );
  // Exactly once, from the rows: one mention row per comment and person, and every counter equal
  // to its rows. (Each row's notification.created is published after its batch commits, and again
  // if the source is redelivered: the emails below count what the receivers made of it.)
  const perComment = await observer.query<{ user_id: string; resource_id: string; n: number }>(
    "SELECT user_id, resource_id, count(*)::int AS n FROM notification_items WHERE type = 'mention' GROUP BY 1, 2 ORDER BY 1, 2",
  );
  expect(perComment.rows.filter((r) => r.user_id === 'ada')).toHaveLength(6);
  expect(perComment.rows.filter((r) => r.user_id === 'bob')).toHaveLength(5);
  expect(perComment.rows.every((r) => r.n === 1)).toBe(true);
  const counters = await observer.query<{ user_id: string; unread_count: number; rows: number }>(
    `SELECT c.user_id, c.unread_count, (SELECT count(*)::int FROM notification_items i WHERE i.user_id = c.user_id AND i.in_app AND i.item_head AND i.item_unread) AS rows
     FROM notification_counters c WHERE c.user_id IN ('ada', 'bob') ORDER BY 1`,
  );
  expect(counters.rows.map((r) => [r.user_id, r.unread_count, r.rows])).toEqual([
    ['ada', 6, 6],
    ['bob', 5, 5],
  ]);
  await observer.end();
  const ada = await inbox('ada');
  const adaMentions = ada.filter((n) => n.type === 'mention');
  expect(adaMentions).toHaveLength(6); // nothing twice
  const unread = await http<{ count: number }>(
    'GET',
    `${apps.notifications.url}/v1/users/ada/notifications/unread-count`,
    undefined,
    {
      authorization: `Bearer ${jwt(SECRET, { sub: 'ada' })}`,
    },
  );
  expect(unread.body.count).toBe(ada.length); // the counter equals the rows

  // Mentions are immediate email by default: one email per mention, never two with one Message-ID.
  await eventually(
    'six mention emails to ada',
    () => smtp.mails.filter((m) => m.to.includes('ada@example.test') && /mention/i.test(m.subject ?? '')).length >= 6,
    60_000,
  );
  const ids = smtp.mails.filter((m) => m.to.includes('ada@example.test')).map((m) => m.messageId);
  expect(new Set(ids).size).toBe(ids.length);
}, 240_000);

it('one-click unsubscribe from a mention email turns mention emails off in notification-service', async () => {
  const mail = await eventually(
    'a mention email to bob',
    () => smtp.mails.find((m) => m.to.includes('bob@example.test') && /mention/i.test(m.subject ?? '')),
    30_000,
  );
  // RFC 8058: the mail client POSTs "List-Unsubscribe=One-Click" to the header's URL.
  const header = mail.raw.replace(/\r\n[ \t]+/g, ' ').match(/^List-Unsubscribe:\s*<([^>]+)>/im)?.[1];
  expect(header).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  expect(mail.raw).toMatch(/^List-Unsubscribe-Post:\s*List-Unsubscribe=One-Click/im);
  const res = await fetch(header!.replace(/&amp;/g, '&'), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  expect(res.status).toBeLessThan(300);
  const prefs = await http<{ preferences: Record<string, { inApp: boolean; email: string }> }>(
    'GET',
    `${apps.notifications.url}/v1/users/bob/preferences`,
    undefined,
    {
      authorization: `Bearer ${jwt(SECRET, { sub: 'bob' })}`,
    },
  );
  expect(prefs.body.preferences.mention).toMatchObject({ email: 'off', inApp: true });
}, 60_000);
