// User erasure end to end (docs/RUNBOOK.md "Erasure"): notification-service, email-service (with an
// SMTP sink), feed-service (with its Redis), push-service (with a push service of the test's own)
// and the reconciler, all in this process on one test
// database, one vhost and one Redis prefix, each built by its own builder. Two users, ada and bob,
// have data in every service; `ops user erase ada` (the CLI, against the reconciler listening on a
// port) erases ada's and leaves bob's, and the audit row names the operator whose key signed it.
import Redis from 'ioredis';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { buildEvent, EVENTS_EXCHANGE, type EventData, type EventType } from '@community/contracts';
import type { Publisher } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  testOperators,
  testRedisPrefix,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createEmailService, loadEmailConfig } from '../apps/email-service/src';
import { createFeedService, loadFeedConfig, type FeedService } from '../apps/feed-service/src';
import {
  createNotificationService,
  loadNotificationConfig,
  type NotificationService,
} from '../apps/notification-service/src';
import { createPushService, loadPushConfig, type PushService } from '../apps/push-service/src';
import { TestPushServer, type TestSubscription } from '../apps/push-service/test/support/push-server';
import { createReconcilerService, loadReconcilerConfig, type ReconcilerService } from '../apps/reconciler/src';
import { main as ops } from '../scripts/ops/ops';
import { adminJwt, http, jwt, startSmtpSink } from './harness';

const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
const OPERATORS = testOperators(['volunteer']);
const PREFIX = testRedisPrefix('e2e:erasure');

let db: TestDatabase;
let vhost: TestVhost;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let ns: NotificationService;
let es: ReturnType<typeof createEmailService>;
let fs: FeedService;
let ps: PushService;
let pushServer: TestPushServer;
const browsers: Record<string, TestSubscription> = {};
let rc: ReconcilerService;
let pool: Pool;
let redis: Redis;
let publisher: Publisher;
let rcUrl: string;
let fsUrl: string;
const registries = { ns: new Registry(), es: new Registry(), fs: new Registry(), ps: new Registry() };

async function runOps(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const io = { out: (t: string) => lines.push(t), err: (t: string) => lines.push(t) };
  const code = await ops(args, io, { RECONCILER_URL: rcUrl, ...OPERATORS.cliEnv('volunteer') });
  return { code, out: lines.join('\n') };
}

const admin = () => ({ authorization: `Bearer ${adminJwt('reconciler', OPERATORS.key('volunteer'))}` });

let clock = Date.parse('2026-12-01T10:00:00.000Z');
/** Publishes a community event as the producer would (the events exchange, routing key = type). */
async function send<T extends EventType>(
  type: T,
  data: EventData<T>,
  occurredAt = new Date((clock += 1000)),
): Promise<void> {
  await publisher.publish(buildEvent(type, data, { producer: 'community-api', occurredAt }), {
    exchange: EVENTS_EXCHANGE,
  });
}

/** messaging_succeeded_total of one service for a message type and outcome, over its queues. */
async function handled(registry: Registry, type: string, outcome: string): Promise<number> {
  const metric = registry.getSingleMetric('messaging_succeeded_total');
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((v) => v.labels.message_type === type && v.labels.outcome === outcome)
    .reduce((n, v) => n + v.value, 0);
}

const rows = async (sql: string, values: unknown[] = []) => (await pool.query(sql, values)).rows;

beforeAll(async () => {
  [db, vhost, smtp, pushServer] = await Promise.all([
    createTestDatabase('e2e_erasure'),
    createTestVhost('e2e-erasure'),
    startSmtpSink(),
    new TestPushServer().start(),
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
  ns = createNotificationService(loadNotificationConfig({ ...common }), {
    logger: testLogger('ns'),
    registry: registries.ns,
  });
  es = createEmailService(
    loadEmailConfig({
      ...common,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      SMTP_CONNECTION_TIMEOUT_MS: '1000',
      SMTP_SOCKET_TIMEOUT_MS: '2000',
    }),
    { logger: testLogger('es'), registry: registries.es, runTicker: false },
  );
  fs = createFeedService(loadFeedConfig({ ...common, FEED_REDIS_PREFIX: PREFIX }), {
    logger: testLogger('fs'),
    registry: registries.fs,
  });
  ps = createPushService(loadPushConfig({ ...common, PUSH_ALLOW_INSECURE_LOCALHOST: 'true' }), {
    logger: testLogger('ps'),
    registry: registries.ps,
  });
  rc = createReconcilerService(loadReconcilerConfig({ ...common, FEED_REDIS_PREFIX: PREFIX }), {
    logger: testLogger('rc'),
    registry: new Registry(),
    runScheduler: false,
    dlqConsole: false,
  });
  pool = rc.pool;
  await Promise.all([ns.start(), es.start(), fs.start(), ps.start(), rc.start()]);
  rcUrl = await rc.app.listen({ port: 0, host: '127.0.0.1' });
  fsUrl = await fs.app.listen({ port: 0, host: '127.0.0.1' });
  const messaging = rc.messaging;
  if (!messaging) throw new Error('the reconciler was built without messaging');
  publisher = messaging.publisher;
  redis = new Redis({ host: '127.0.0.1', port: 6379, keyPrefix: PREFIX, lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
}, 120_000);

afterAll(async () => {
  for (const s of [rc, ps, fs, es, ns]) {
    await s?.stop();
    await s?.app.close();
  }
  if (redis) {
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length) await redis.del(...keys.map((k) => k.slice(PREFIX.length)));
    redis.disconnect();
  }
  await smtp?.close();
  await pushServer?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

describe('POST /v1/admin/users/:userId/erasure', () => {
  it('needs a token (401) and an operator admin token (403 for a user, even for their own id)', async () => {
    const none = await http('POST', `${rcUrl}/v1/admin/users/zed/erasure`);
    expect(none.status).toBe(401);
    const user = await http<{ code: string }>('POST', `${rcUrl}/v1/admin/users/zed/erasure`, undefined, {
      authorization: `Bearer ${jwt(JWT_SECRET, { sub: 'zed' })}`,
    });
    expect(user).toMatchObject({ status: 403, body: { code: 'RC_ADMIN_REQUIRED' } });
    const status = await http('GET', `${rcUrl}/v1/admin/erasures/1`, undefined, {
      authorization: `Bearer ${jwt(JWT_SECRET, { sub: 'zed' })}`,
    });
    expect(status.status).toBe(403);
    expect(await rows(`SELECT * FROM user_erasures WHERE user_id = 'zed'`)).toEqual([]);
  });

  it('is idempotent per request: the same Idempotency-Key answers the same audit row and enqueues one event', async () => {
    const headers = { ...admin(), 'idempotency-key': 'erase-zed-1' };
    const first = await http<{ erasureId: string; eventId: string; requestedBy: string; replayed: boolean }>(
      'POST',
      `${rcUrl}/v1/admin/users/zed/erasure`,
      undefined,
      headers,
    );
    expect(first).toMatchObject({ status: 202, body: { requestedBy: 'volunteer', replayed: false } });
    const again = await http<{ erasureId: string; replayed: boolean }>(
      'POST',
      `${rcUrl}/v1/admin/users/zed/erasure`,
      undefined,
      headers,
    );
    expect(again).toMatchObject({
      status: 200,
      body: { erasureId: first.body.erasureId, eventId: first.body.eventId, replayed: true },
    });
    const other = await http<{ code: string }>('POST', `${rcUrl}/v1/admin/users/yan/erasure`, undefined, headers);
    expect(other).toMatchObject({ status: 409, body: { code: 'RC_ERASURE_KEY_REUSED' } });
    expect(await rows(`SELECT user_id FROM user_erasures WHERE request_key = 'erase-zed-1'`)).toEqual([
      { user_id: 'zed' },
    ]);
    expect(
      await rows(`SELECT producer, event_type, aggregate_id FROM outbox_messages WHERE event_id = $1`, [
        first.body.eventId,
      ]),
    ).toEqual([{ producer: 'reconciler', event_type: 'user.erased', aggregate_id: 'zed' }]);
    // Published by the reconciler's relay, and every consumer has it (zed had nothing: nothing erased, still done).
    await eventually(
      'the erasure of zed is done',
      async () => {
        const s = await http<{ done: boolean }>(
          'GET',
          `${rcUrl}/v1/admin/erasures/${first.body.erasureId}`,
          undefined,
          admin(),
        );
        return s.body.done;
      },
      60_000,
    );
  });
});

describe('ops user erase', () => {
  const ADA_POST = 'post-ada-1';
  const BOB_POST = 'post-bob-1';

  beforeAll(async () => {
    await send('user.upserted', { userId: 'ada', email: 'ada@example.test', displayName: 'Ada' });
    await send('user.upserted', { userId: 'bob', email: 'bob@example.test', displayName: 'Bob' });
    await send('user.followed', { followerId: 'bob', followeeId: 'ada' });
    await send('user.followed', { followerId: 'ada', followeeId: 'bob' });
    await eventually('both projections and both edges', async () => {
      const [emails, names, edges] = await Promise.all([
        rows(`SELECT user_id FROM email_users WHERE email <> ''`),
        rows(`SELECT user_id FROM notification_users`),
        rows(`SELECT 1 FROM feed_follows WHERE active`),
      ]);
      return emails.length === 2 && names.length === 2 && edges.length === 2;
    });
    // Both read their feeds once: the feeds become live, so fan-out writes them in Redis.
    for (const u of ['ada', 'bob']) {
      const r = await http('GET', `${fsUrl}/v1/users/${u}/feed`, undefined, {
        authorization: `Bearer ${jwt(JWT_SECRET, { sub: u })}`,
      });
      expect(r.status).toBe(200);
    }
    // Both subscribe a browser to push: mentions push by default.
    for (const u of ['ada', 'bob']) {
      browsers[u] = pushServer.subscribe();
      const r = await ps.app.inject({
        method: 'POST',
        url: `/v1/users/${u}/push-subscriptions`,
        headers: { authorization: `Bearer ${jwt(JWT_SECRET, { sub: u })}` },
        payload: browsers[u].json,
      });
      expect(r.statusCode).toBe(201);
    }
    await send('user.mentioned', {
      commentId: 'c-bob',
      postId: 'p0',
      actorId: 'bob',
      mentionedUserId: 'ada',
      excerpt: 'bob asks @ada',
    });
    await send('user.mentioned', {
      commentId: 'c-ada',
      postId: 'p0',
      actorId: 'ada',
      mentionedUserId: 'bob',
      excerpt: "ada's own words to @bob",
    });
    await send('post.published', { postId: ADA_POST, authorId: 'ada', title: 'Ada writes', excerpt: 'by ada' });
    await send('post.published', { postId: BOB_POST, authorId: 'bob', title: 'Bob writes', excerpt: 'by bob' });
    await eventually(
      "every service holds both users' data",
      async () => {
        const [items, sent, digest, feeds, bodies, pushed] = await Promise.all([
          rows(`SELECT user_id, actor_id FROM notification_items`),
          rows(`SELECT user_id FROM email_deliveries WHERE state = 'sent'`),
          rows(`SELECT user_id, actor_id FROM email_digest_items`),
          Promise.all([redis.zrange('f:ada', 0, -1), redis.zrange('f:bob', 0, -1)]),
          redis.exists(`p:${ADA_POST}`, `p:${BOB_POST}`),
          rows(`SELECT user_id FROM push_deliveries WHERE state = 'sent'`),
        ]);
        // Per user: a follow (digest) and a mention (immediate, sent); each feed holds the other's post.
        return (
          items.length === 4 &&
          sent.length === 2 &&
          digest.length === 2 &&
          feeds[0].includes(BOB_POST) &&
          feeds[1].includes(ADA_POST) &&
          bodies === 2 &&
          pushed.length === 2
        );
      },
      60_000,
    );
    // Written only now: a follow opt-out in place while email-service still handles the follows'
    // notifications suppresses their digest items, and the wait above would never end.
    await pool.query(
      `INSERT INTO notification_preferences (user_id, type, in_app, email) VALUES ('ada', 'reaction', false, 'off'), ('bob', 'reaction', false, 'off')`,
    );
    await pool.query(`INSERT INTO email_suppressions (user_id, scope) VALUES ('ada', 'follow'), ('bob', 'follow')`);
  }, 120_000);

  it("erases ada's data in every service, anonymises her in bob's, leaves bob's alone, and audits the operator", async () => {
    const bobBefore = {
      items: await rows(
        `SELECT id, type, actor_id, excerpt FROM notification_items WHERE user_id = 'bob' AND actor_id IS DISTINCT FROM 'ada' ORDER BY id`,
      ),
      email: await rows(`SELECT email, display_name FROM email_users WHERE user_id = 'bob'`),
      sent: await rows(`SELECT idempotency_key, smtp_response FROM email_deliveries WHERE user_id = 'bob' ORDER BY id`),
    };
    const run = await runOps('user', 'erase', 'ada');
    expect(run.code).toBe(0);
    expect(run.out).toContain('Requested: erasure of user ada');
    const erasureId = /audit id (\d+)/.exec(run.out)?.[1];
    expect(erasureId).toBeDefined();
    expect(await rows(`SELECT user_id, requested_by FROM user_erasures WHERE id = $1`, [erasureId])).toEqual([
      { user_id: 'ada', requested_by: 'volunteer' },
    ]);

    // Done when the event was published and every consumer's inbox has it (their transactions committed).
    await eventually(
      'ops user erase --status says done',
      async () => (await runOps('user', 'erase', '--status', String(erasureId))).code === 0,
      60_000,
    );
    const status = await runOps('user', 'erase', '--status', String(erasureId));
    expect(status.out).toMatch(/notification-service\.standard\s+erased/);
    expect(status.out).toMatch(/email-service\.users\s+erased/);
    expect(status.out).toMatch(/feed-service\.activity\s+erased/);
    expect(status.out).toMatch(/push-service\.send\s+erased/);

    // notification-service: ada's notifications, counter, preferences and name are gone; bob's
    // notification by ada has no actor and no excerpt any more; bob's others are as they were.
    expect(await rows(`SELECT 1 FROM notification_items WHERE user_id = 'ada'`)).toEqual([]);
    expect(await rows(`SELECT 1 FROM notification_counters WHERE user_id = 'ada'`)).toEqual([]);
    expect(await rows(`SELECT user_id FROM notification_preferences`)).toEqual([{ user_id: 'bob' }]);
    expect(await rows(`SELECT user_id FROM notification_users`)).toEqual([{ user_id: 'bob' }]);
    expect(
      await rows(
        `SELECT type, actor_id, excerpt FROM notification_items WHERE user_id = 'bob' AND idempotency_key LIKE 'mention:%'`,
      ),
    ).toEqual([{ type: 'mention', actor_id: null, excerpt: null }]);
    expect(await rows(`SELECT 1 FROM notification_items WHERE actor_id = 'ada'`)).toEqual([]);
    expect(
      await rows(
        `SELECT id, type, actor_id, excerpt FROM notification_items WHERE user_id = 'bob' AND actor_id IS NOT NULL ORDER BY id`,
      ),
    ).toEqual(bobBefore.items);
    const inbox = await http<{
      items: Array<{ type: string; actorId: string | null; actorName: string | null; excerpt: string | null }>;
    }>('GET', `${await nsUrl()}/v1/users/bob/notifications`, undefined, {
      authorization: `Bearer ${jwt(JWT_SECRET, { sub: 'bob' })}`,
    });
    expect(inbox.status).toBe(200);
    // ada's mention of bob and her follow of bob: both stay in bob's inbox, by "a deleted user".
    expect(
      inbox.body.items
        .filter((i) => i.actorId === null)
        .map((i) => [i.type, i.actorName, i.excerpt])
        .sort(),
    ).toEqual([
      ['follow', null, null],
      ['mention', null, null],
    ]);

    // email-service: ada's address and name are gone (the row is a tombstone), her ledger rows
    // stay without the SMTP response, her digests and opt-outs are gone; bob's digest item by ada
    // has no actor; bob's rows are as they were.
    expect(await rows(`SELECT email, display_name, locale FROM email_users WHERE user_id = 'ada'`)).toEqual([
      { email: '', display_name: 'a deleted user', locale: null },
    ]);
    expect(await rows(`SELECT state, smtp_response, last_error FROM email_deliveries WHERE user_id = 'ada'`)).toEqual([
      { state: 'sent', smtp_response: null, last_error: null },
    ]);
    expect(await rows(`SELECT 1 FROM email_digest_windows WHERE user_id = 'ada'`)).toEqual([]);
    expect(await rows(`SELECT 1 FROM email_digest_items WHERE user_id = 'ada'`)).toEqual([]);
    expect(await rows(`SELECT user_id FROM email_suppressions`)).toEqual([{ user_id: 'bob' }]);
    expect(await rows(`SELECT actor_id, excerpt FROM email_digest_items WHERE user_id = 'bob'`)).toEqual([
      { actor_id: null, excerpt: null },
    ]);
    expect(await rows(`SELECT email, display_name FROM email_users WHERE user_id = 'bob'`)).toEqual(bobBefore.email);
    expect(
      await rows(`SELECT idempotency_key, smtp_response FROM email_deliveries WHERE user_id = 'bob' ORDER BY id`),
    ).toEqual(bobBefore.sent);
    expect(bobBefore.sent[0].smtp_response).not.toBeNull();

    // feed-service: ada's edges, posts and activity are gone, in Postgres and in Redis; bob's stay.
    expect(await rows(`SELECT follower_id, followee_id FROM feed_follows`)).toEqual([]);
    expect(await rows(`SELECT post_id FROM feed_posts`)).toEqual([{ post_id: BOB_POST }]);
    expect(await rows(`SELECT 1 FROM feed_user_activity WHERE user_id = 'ada'`)).toEqual([]);
    expect(await redis.exists('f:ada', 'live:ada', 'ready:ada', `p:${ADA_POST}`)).toBe(0);
    expect(await redis.zrange('f:bob', 0, -1)).toEqual([]);
    expect(await redis.exists(`p:${BOB_POST}`, 'f:bob', 'live:bob')).toBeGreaterThanOrEqual(2);

    // push-service: ada's browser is unsubscribed (its endpoint and keys identify her); her ledger
    // row stays without its payload (it keeps a late copy from pushing again); bob's are as they were.
    expect(await rows(`SELECT endpoint FROM push_subscriptions ORDER BY user_id`)).toEqual([
      { endpoint: browsers.bob.endpoint },
    ]);
    expect(
      await rows(`SELECT user_id, state, payload IS NULL AS erased FROM push_deliveries ORDER BY user_id`),
    ).toEqual([
      { user_id: 'ada', state: 'sent', erased: true },
      { user_id: 'bob', state: 'sent', erased: false },
    ]);
  }, 120_000);

  it('a redelivered erasure changes nothing; a stale user.upserted does not bring the address back; erasing again is fine', async () => {
    const [erasure] = await rows(`SELECT id::text, event_id::text FROM user_erasures WHERE user_id = 'ada'`);
    // Stale: older than the erasure. The tombstone wins (last write wins on occurredAt).
    const staleBefore = await handled(registries.es, 'user.upserted', 'duplicate');
    await send(
      'user.upserted',
      { userId: 'ada', email: 'ada@example.test', displayName: 'Ada' },
      new Date('2026-01-01T00:00:00.000Z'),
    );
    await eventually(
      'the stale upsert is acked as a duplicate',
      async () => (await handled(registries.es, 'user.upserted', 'duplicate')) > staleBefore,
    );
    expect(await rows(`SELECT email FROM email_users WHERE user_id = 'ada'`)).toEqual([{ email: '' }]);

    // ada comes back (a newer upsert, a new follow): then the same erasure event arrives again.
    await send(
      'user.upserted',
      { userId: 'ada', email: 'ada-again@example.test', displayName: 'Ada again' },
      new Date(Date.now() + 60_000),
    );
    await send('user.followed', { followerId: 'bob', followeeId: 'ada' }, new Date(Date.now() + 60_000));
    await eventually('ada is back in every service', async () => {
      const [email, name, edge] = await Promise.all([
        rows(`SELECT 1 FROM email_users WHERE user_id = 'ada' AND email = 'ada-again@example.test'`),
        rows(`SELECT 1 FROM notification_users WHERE user_id = 'ada'`),
        rows(`SELECT 1 FROM feed_follows WHERE followee_id = 'ada' AND active`),
      ]);
      return email.length === 1 && name.length === 1 && edge.length === 1;
    });
    const [outboxRow] = await rows(`SELECT payload FROM outbox_messages WHERE event_id = $1`, [erasure.event_id]);
    const before = await Promise.all(
      [registries.ns, registries.es, registries.fs, registries.ps].map((r) => handled(r, 'user.erased', 'duplicate')),
    );
    await publisher.publish(outboxRow.payload, { exchange: EVENTS_EXCHANGE });
    await eventually('each service acks the redelivered erasure as a duplicate', async () => {
      const now = await Promise.all(
        [registries.ns, registries.es, registries.fs, registries.ps].map((r) => handled(r, 'user.erased', 'duplicate')),
      );
      return now.every((n, i) => n > before[i]);
    });
    expect(await rows(`SELECT email FROM email_users WHERE user_id = 'ada'`)).toEqual([
      { email: 'ada-again@example.test' },
    ]);
    expect(await rows(`SELECT 1 FROM feed_follows WHERE followee_id = 'ada'`)).toHaveLength(1);

    // A second erasure (a new request) erases what came back.
    const second = await runOps('user', 'erase', 'ada');
    const secondId = /audit id (\d+)/.exec(second.out)?.[1];
    expect(secondId).not.toBe(erasure.id);
    await eventually(
      'the second erasure is done',
      async () => (await runOps('user', 'erase', '--status', String(secondId))).code === 0,
      60_000,
    );
    expect(await rows(`SELECT email FROM email_users WHERE user_id = 'ada'`)).toEqual([{ email: '' }]);
    expect(await rows(`SELECT 1 FROM notification_users WHERE user_id = 'ada'`)).toEqual([]);
    expect(await rows(`SELECT 1 FROM feed_follows WHERE followee_id = 'ada'`)).toEqual([]);
  }, 120_000);
});

let nsListening: string | undefined;
async function nsUrl(): Promise<string> {
  nsListening ??= await ns.app.listen({ port: 0, host: '127.0.0.1' });
  return nsListening;
}
