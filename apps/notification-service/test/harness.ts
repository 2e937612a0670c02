import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import {
  buildEvent,
  EVENTS_EXCHANGE,
  type AnyEvent,
  type EventData,
  type EventOf,
  type EventType,
} from '@community/contracts';
import type { BatchItem, MessageContext } from '@community/messaging';
import { brokerUserOf, type Messaging, type Topology } from '@community/messaging';
import type { OutboxRelay } from '@community/outbox';
import {
  createTestDatabase,
  createTestVhost,
  testLogger,
  testOperators,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { loadNotificationConfig, type NotificationConfig } from '../src/config';
import type { NotificationMetrics } from '../src/metrics';
import { createNotificationService, type NotificationService } from '../src/service';
import type { InboxHub } from '../src/sse/hub';
import type { Emit } from '../src/handlers/emit';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
/** The operators ADMIN_KEYS trusts here (each with a key of their own). */
export const OPERATORS = testOperators();

export interface Harness {
  service: NotificationService;
  db: TestDatabase;
  pool: Pool;
  app: FastifyInstance;
  hub: InboxHub;
  metrics: NotificationMetrics;
  vhost?: TestVhost;
  messaging?: Messaging;
  relay?: OutboxRelay;
  /**
   * A user token (HS256, iss/aud/exp) for `sub`, optionally with a scope; with the `admin` scope, the
   * admin token of operator `sub` (EdDSA, their own key in ADMIN_KEYS): a user token's admin scope grants nothing.
   */
  token(sub: string, scope?: string): string;
  /**
   * Every notification.created that reached the broker (a queue of the test's own, bound on the
   * events exchange, with AMQP) or that a handler built by the test emitted through `emit`, in
   * arrival order; a re-emission appears again (same id).
   */
  created: EventOf<'notification.created'>[];
  /** The data of `created` for one recipient. */
  createdFor(userId: string): EventOf<'notification.created'>['data'][];
  /** For handlers a test builds itself: records into `created` what the service would publish. */
  emit: Emit;
  /** Publishes through the service's own confirm publisher (routing key = type). */
  publish(event: AnyEvent): Promise<void>;
  /** Publishes raw bytes with a routing key, as a buggy producer would. */
  publishRaw(routingKey: string, body: Buffer | string, messageId?: string): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Real RabbitMQ vhost + consumers (default true). */
  amqp?: boolean;
  heartbeatMs?: number;
  /** Notifications an SSE resume replays at most. */
  backlogLimit?: number;
  /** CONSUMER_BATCH_WAIT_MS (here 5 unless given; the service's own default is 10): longer makes messages published together share a batch. */
  batchWaitMs?: number;
  /** The service's logger (default: silent), e.g. to observe what it logs. */
  logger?: Logger;
  /** CONSUMER_BATCH_CONCURRENCY (default 2). */
  batchConcurrency?: number;
  /** The batch deadline (default BATCH_TIMEOUT_MS, 10 s). */
  batchTimeoutMs?: number;
  /** COMMUNITY_TOPOLOGY unless given (e.g. with short retry tiers). */
  topology?: Topology;
  /** "Now" of the batches (quiet hours), fixed by tests; default the system clock. */
  clock?: () => Date;
}

/** The service's configuration against a test database and vhost (tunables sized for tests). */
export function testConfig(
  db: TestDatabase,
  vhost: TestVhost | undefined,
  options: HarnessOptions = {},
): NotificationConfig {
  return loadNotificationConfig({
    DATABASE_URL: db.url,
    // Without a vhost the service is built without messaging and never connects to this URL.
    AMQP_URL: vhost?.url ?? 'amqp://guest:guest@127.0.0.1:5672',
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_MAX: '8',
    CONSUMER_BATCH_SIZE: '50',
    CONSUMER_BATCH_WAIT_MS: String(options.batchWaitMs ?? 5),
    CONSUMER_BATCH_CONCURRENCY: String(options.batchConcurrency ?? 2),
    SSE_HEARTBEAT_MS: String(options.heartbeatMs ?? 60_000),
    SHUTDOWN_TIMEOUT_MS: '3000',
  });
}

/** One service instance in-process against its own vhost and database, built by the service's own builder. */
export async function startHarness(prefix: string, options: HarnessOptions = {}): Promise<Harness> {
  const withAmqp = options.amqp ?? true;
  const [db, vhost] = await Promise.all([
    createTestDatabase(`ns_${prefix}`),
    withAmqp ? createTestVhost(`ns-${prefix}`) : Promise.resolve(undefined),
  ]);
  const service = createNotificationService(testConfig(db, vhost, options), {
    logger: options.logger ?? testLogger(prefix),
    registry: new Registry(),
    messaging: withAmqp,
    relayPollIntervalMs: 200,
    sseBacklogLimit: options.backlogLimit,
    batchTimeoutMs: options.batchTimeoutMs,
    topology: options.topology,
    clock: options.clock,
  });
  await service.start();
  const { app, pool, hub, metrics, messaging, relay } = service;
  await app.ready();
  const created: EventOf<'notification.created'>[] = [];
  const capture = vhost ? await captureCreated(vhost.url, created) : undefined;

  return {
    service,
    db,
    pool,
    app,
    hub,
    metrics,
    vhost,
    messaging,
    relay,
    created,
    createdFor: (userId) => created.filter((e) => e.data.userId === userId).map((e) => e.data),
    emit: async (emissions) => {
      created.push(...emissions.map((e) => e.event));
    },
    token: (sub, scope) =>
      scope?.split(' ').includes('admin')
        ? OPERATORS.token(sub, 'notification-service')
        : app.jwt.sign(scope === undefined ? { sub } : { sub, scope }),
    async publish(event) {
      if (!messaging) throw new Error('harness started without AMQP');
      await messaging.publisher.publish(event);
    },
    async publishRaw(routingKey, body, messageId = randomUUID()) {
      if (!vhost) throw new Error('harness started without AMQP');
      const conn = await amqplib.connect(vhost.url);
      try {
        const ch = await conn.createConfirmChannel();
        ch.publish('community.events', routingKey, Buffer.isBuffer(body) ? body : Buffer.from(body), {
          persistent: true,
          contentType: 'application/json',
          messageId,
          type: routingKey,
          // Who published it (the broker checks it; consumers dead-letter a message without it).
          userId: brokerUserOf(vhost.url),
        });
        await ch.waitForConfirms();
      } finally {
        await conn.close().catch(() => undefined);
      }
    },
    async close() {
      await capture?.close().catch(() => undefined);
      await service.stop();
      await app.close(); // ends the pool (onClose)
      await Promise.all([db.drop(), vhost?.delete()]);
    },
  };
}

/** A consumer of every notification.created on the vhost, into `into` (as email-service and push-service receive them). */
async function captureCreated(url: string, into: EventOf<'notification.created'>[]): Promise<amqplib.ChannelModel> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createChannel();
  const { queue } = await ch.assertQueue('', { exclusive: true });
  await ch.bindQueue(queue, EVENTS_EXCHANGE, 'notification.created');
  await ch.consume(queue, (msg) => msg && into.push(JSON.parse(msg.content.toString())), { noAck: true });
  return conn;
}

/** A valid event of `type` with `data`, produced by the community API. */
export function event<T extends EventType>(type: T, data: EventData<T>, id?: string): EventOf<T> {
  return buildEvent(type, data, { producer: 'community-api', id });
}

export function mention(
  commentId: string,
  actorId: string,
  mentionedUserId: string,
  id?: string,
): EventOf<'user.mentioned'> {
  return event(
    'user.mentioned',
    { commentId, postId: 'post-1', actorId, mentionedUserId, excerpt: `@${mentionedUserId} look` },
    id,
  );
}

/** Batch items as the messaging runtime hands them to a batch handler (for direct calls). */
export function batchItems(events: AnyEvent[]): BatchItem<AnyEvent>[] {
  return events.map((e) => ({
    event: e,
    ctx: {
      logger: testLogger(),
      signal: new AbortController().signal,
      attempt: 1,
      deliveryCount: 1,
      queue: 'test',
      handler: 'test',
      eventId: e.id,
      correlationId: e.correlationId,
    } satisfies MessageContext,
  }));
}

/** Unread count from the counter table and from a recount of the rows, per user. */
export async function countersAndRecount(
  pool: Pool,
): Promise<Array<{ user_id: string; counter: number; recount: number }>> {
  const { rows } = await pool.query<{ user_id: string; counter: number; recount: string }>(
    `SELECT c.user_id, c.unread_count AS counter,
            (SELECT count(*) FROM notification_items n WHERE n.user_id = c.user_id AND n.in_app AND n.item_head AND n.item_unread) AS recount
     FROM notification_counters c ORDER BY c.user_id`,
  );
  return rows.map((r) => ({ user_id: r.user_id, counter: r.counter, recount: Number(r.recount) }));
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
