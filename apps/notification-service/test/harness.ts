import { randomUUID } from 'node:crypto';
import amqplib from 'amqplib';
import type { FastifyInstance } from 'fastify';
import { Pool } from 'pg';
import { Registry } from 'prom-client';
import { buildEvent, COMMUNITY_TOPOLOGY, type AnyEvent, type EventData, type EventOf, type EventType } from '@community/contracts';
import type { BatchItem, MessageContext } from '@community/messaging';
import { classifyPgError } from '@community/db';
import { createMessaging, type Messaging } from '@community/messaging';
import { createRelay, type OutboxRelay } from '@community/outbox';
import { createTestDatabase, createTestVhost, testLogger, type TestDatabase, type TestVhost } from '@community/testing';
import { buildApp } from '../src/app';
import { registerConsumers } from '../src/consumers';
import { notificationMetrics, type NotificationMetrics } from '../src/metrics';
import { createInboxHub, type InboxHub } from '../src/sse/hub';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';

export interface Harness {
  db: TestDatabase;
  pool: Pool;
  app: FastifyInstance;
  hub: InboxHub;
  metrics: NotificationMetrics;
  vhost?: TestVhost;
  messaging?: Messaging;
  relay?: OutboxRelay;
  /** HS256 token for `sub` (optionally with a scope). */
  token(sub: string, scope?: string): string;
  /** Publishes through the service's own confirm publisher (routing key = type). */
  publish(event: AnyEvent): Promise<void>;
  /** Publishes raw bytes with a routing key, as a buggy producer would. */
  publishRaw(routingKey: string, body: Buffer | string, messageId?: string): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Real RabbitMQ vhost + consumers (default true). */
  amqp?: boolean;
  /** The outbox relay too (default false). */
  relay?: boolean;
  heartbeatMs?: number;
  /** Notifications an SSE resume replays at most. */
  backlogLimit?: number;
}

/** One service instance in-process against its own vhost and database. */
export async function startHarness(prefix: string, options: HarnessOptions = {}): Promise<Harness> {
  const withAmqp = options.amqp ?? true;
  const [db, vhost] = await Promise.all([createTestDatabase(`ns_${prefix}`), withAmqp ? createTestVhost(`ns-${prefix}`) : Promise.resolve(undefined)]);
  const logger = testLogger(prefix);
  const registry = new Registry();
  const metrics = notificationMetrics(registry);
  const pool = new Pool({ connectionString: db.url, max: 8 });
  pool.on('error', () => undefined);
  const hub = createInboxHub({ databaseUrl: db.url, pool, logger, metrics, heartbeatMs: options.heartbeatMs ?? 60_000, backlogLimit: options.backlogLimit });
  await hub.start();

  let messaging: Messaging | undefined;
  let relay: OutboxRelay | undefined;
  if (vhost) {
    messaging = createMessaging({ url: vhost.url, service: 'notification-service-test', topology: COMMUNITY_TOPOLOGY, logger, registry, classifiers: [classifyPgError] });
    registerConsumers(messaging, { pool, metrics }, { batchSize: 50, batchWaitMs: 5, batchConcurrency: 2 });
    await messaging.start();
    if (options.relay) {
      relay = createRelay({ pool, publisher: messaging.publisher, producer: 'notification-service', logger, registry, databaseUrl: db.url, pollIntervalMs: 200 });
      await relay.start();
    }
  }
  const app = await buildApp({ pool, logger, registry, metrics, hub, jwtSecret: JWT_SECRET, readiness: () => ({ ok: true }) });
  await app.ready();

  return {
    db,
    pool,
    app,
    hub,
    metrics,
    vhost,
    messaging,
    relay,
    token: (sub, scope) => app.jwt.sign(scope === undefined ? { sub } : { sub, scope }),
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
        });
        await ch.waitForConfirms();
      } finally {
        await conn.close().catch(() => undefined);
      }
    },
    async close() {
      await app.close();
      await relay?.stop();
      await messaging?.stop(2000);
      await hub.stop();
      await pool.end();
      await Promise.all([db.drop(), vhost?.delete()]);
    },
  };
}

/** A valid event of `type` with `data`, produced by the community API. */
export function event<T extends EventType>(type: T, data: EventData<T>, id?: string): EventOf<T> {
  return buildEvent(type, data, { producer: 'community-api', id });
}

export function mention(commentId: string, actorId: string, mentionedUserId: string, id?: string): EventOf<'user.mentioned'> {
  return event('user.mentioned', { commentId, postId: 'post-1', actorId, mentionedUserId, excerpt: `@${mentionedUserId} look` }, id);
}

/** Batch items as the messaging runtime hands them to a batch handler (for direct calls). */
export function batchItems(events: AnyEvent[]): BatchItem<AnyEvent>[] {
  return events.map((e) => ({
    event: e,
    ctx: { logger: testLogger(), signal: new AbortController().signal, attempt: 1, deliveryCount: 1, queue: 'test', handler: 'test', eventId: e.id, correlationId: e.correlationId } satisfies MessageContext,
  }));
}

/** Unread count from the counter table and from a recount of the rows, per user. */
export async function countersAndRecount(pool: Pool): Promise<Array<{ user_id: string; counter: number; recount: number }>> {
  const { rows } = await pool.query<{ user_id: string; counter: number; recount: string }>(
    `SELECT c.user_id, c.unread_count AS counter,
            (SELECT count(*) FROM notification_items n WHERE n.user_id = c.user_id AND n.in_app AND n.read_at IS NULL) AS recount
     FROM notification_counters c ORDER BY c.user_id`,
  );
  return rows.map((r) => ({ user_id: r.user_id, counter: r.counter, recount: Number(r.recount) }));
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
