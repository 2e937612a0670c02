import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import {
  buildEvent,
  COMMUNITY_TOPOLOGY,
  notificationHeaders,
  type EventOf,
  type NotificationType,
} from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { loadEmailConfig, type EmailConfig } from '../../src/config';
import { createEmailService, type EmailService } from '../../src/service';
import type { TestSmtp } from './smtp';

/** COMMUNITY_TOPOLOGY (same queues and bindings) with short retry tiers, so retries fit in a test. */
export function shortRetryTopology(retryDelaysMs: number[]): Topology {
  return { ...COMMUNITY_TOPOLOGY, queues: COMMUNITY_TOPOLOGY.queues.map((q) => ({ ...q, retryDelaysMs })) };
}

export interface Infra {
  vhost: TestVhost;
  db: TestDatabase;
  close(): Promise<void>;
}

export async function createInfra(prefix: string): Promise<Infra> {
  const [vhost, db] = await Promise.all([createTestVhost(prefix), createTestDatabase(prefix)]);
  return {
    vhost,
    db,
    async close() {
      await vhost.delete();
      await db.drop();
    },
  };
}

export function testConfig(infra: Infra, smtp: TestSmtp, env: Record<string, string> = {}): EmailConfig {
  return loadEmailConfig({
    AMQP_URL: infra.vhost.url,
    DATABASE_URL: infra.db.url,
    SMTP_URL: smtp.url,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SMTP_RATE_PER_SECOND: '0',
    SMTP_CONNECTION_TIMEOUT_MS: '1000',
    SMTP_SOCKET_TIMEOUT_MS: '2000',
    EMAIL_LEASE_MS: '5000',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...env,
  });
}

export interface StartedService {
  svc: EmailService;
  registry: Registry;
  config: EmailConfig;
  /** Publishes as notification-service does: notification.created with its `notification-type` header. */
  publish(event: {
    id: string;
    type: string;
    version: number;
    occurredAt: string;
    correlationId: string;
  }): Promise<void>;
  /** Publishes without the header, as before it existed (a message already queued at an upgrade). */
  publishWithoutHeaders(event: {
    id: string;
    type: string;
    version: number;
    occurredAt: string;
    correlationId: string;
  }): Promise<void>;
  /** A counter or gauge value from the service's registry (summed over matching labels). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** Publishes the events (with the header) and waits until the service has handled that many more messages. */
  publishAndWait(...events: Array<Parameters<StartedService['publish']>[0]>): Promise<void>;
}

export async function startService(
  config: EmailConfig,
  options: {
    retryDelaysMs?: number[];
    clock?: () => Date;
    rateLimitClock?: () => number;
    runTicker?: boolean;
    before?: (svc: EmailService) => void;
  } = {},
): Promise<StartedService> {
  const registry = new Registry();
  const svc = createEmailService(config, {
    logger: testLogger('email-service'),
    registry,
    topology: shortRetryTopology(options.retryDelaysMs ?? [200, 400, 800]),
    clock: options.clock,
    rateLimitClock: options.rateLimitClock,
    runTicker: options.runTicker ?? false,
  });
  options.before?.(svc);
  await svc.start();
  const started: StartedService = {
    svc,
    registry,
    config,
    publish: (event) => {
      const headers = notificationHeaders(event);
      return svc.messaging.publisher.publish(event, headers ? { headers } : {});
    },
    publishWithoutHeaders: (event) => svc.messaging.publisher.publish(event),
    async metric(name, labels = {}) {
      const m = registry.getSingleMetric(name);
      if (!m) return 0;
      const { values } = await m.get();
      return values
        .filter((v) =>
          Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want),
        )
        .reduce((sum, v) => sum + v.value, 0);
    },
    async publishAndWait(...events) {
      const before = await started.metric('messaging_succeeded_total');
      for (const e of events) await started.publish(e);
      await eventually(
        `${events.length} handled`,
        async () => (await started.metric('messaging_succeeded_total')) - before >= events.length,
      );
    },
  };
  return started;
}

export function userUpserted(
  userId: string,
  email: string,
  displayName: string,
  occurredAt: Date = new Date(),
  more: { locale?: string; timezone?: string } = {},
): EventOf<'user.upserted'> {
  return buildEvent('user.upserted', { userId, email, displayName, ...more }, { producer: 'test', occurredAt });
}

export interface NotificationInput {
  userId: string;
  type?: NotificationType;
  actorId?: string;
  emailChannel?: 'immediate' | 'digest' | 'off';
  excerpt?: string;
  idempotencyKey?: string;
  notificationId?: string;
  occurredAt?: Date;
  /** The end of the user's quiet hours (delivery timing). */
  quietUntil?: Date;
  groupKey?: string;
  resourceType?: string;
  resourceId?: string;
}

export function notificationCreated(n: NotificationInput): EventOf<'notification.created'> {
  const type = n.type ?? 'mention';
  const notificationId = n.notificationId ?? randomUUID();
  return buildEvent(
    'notification.created',
    {
      notificationId,
      userId: n.userId,
      type,
      idempotencyKey: n.idempotencyKey ?? `${type}:${notificationId}:${n.userId}`,
      actorId: n.actorId,
      resourceType: n.resourceType ?? (type === 'follow' ? 'user' : 'comment'),
      resourceId: n.resourceId ?? `r-${notificationId}`,
      emailChannel: n.emailChannel ?? 'immediate',
      excerpt: n.excerpt,
      ...(n.quietUntil ? { quietUntil: n.quietUntil.toISOString() } : {}),
      ...(n.groupKey ? { groupKey: n.groupKey } : {}),
    },
    { producer: 'notification-service', occurredAt: n.occurredAt },
  );
}
