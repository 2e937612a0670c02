import { Registry } from 'prom-client';
import { buildEvent, COMMUNITY_TOPOLOGY, type EventOf } from '@community/contracts';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  testOperators,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { loadPushConfig, type PushConfig } from '../../src/config';
import { createPushService, type PushService, type PushServiceDeps } from '../../src/service';
import type { Answer, TestPushServer, TestSubscription } from './push-server';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
export const OPERATORS = testOperators();
export const PUBLIC_BASE_URL = 'https://community.test';

/** Short retry tiers: a test waits seconds, not minutes, for a delayed retry. */
const FAST_RETRY_TOPOLOGY: Topology = {
  ...COMMUNITY_TOPOLOGY,
  queues: COMMUNITY_TOPOLOGY.queues.map((q) => ({ ...q, retryDelaysMs: [200, 400, 800] })),
};

export interface Harness {
  svc: PushService;
  config: PushConfig;
  db: TestDatabase;
  vhost: TestVhost;
  /** A user token for `sub`. */
  token(sub: string): string;
  /** An operator's admin token for push-service. */
  adminToken(operator?: string): string;
  publish(event: EventOf<'notification.created' | 'notification.withdrawn' | 'user.erased'>): Promise<void>;
  /** A runtime or service counter's value (summed over matching label sets). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /** Publishes the events and waits until the service has handled that many more messages. */
  publishAndWait(
    ...events: Array<EventOf<'notification.created' | 'notification.withdrawn' | 'user.erased'>>
  ): Promise<void>;
  /** A browser of `push` subscribed for `userId` through the API (201), answering `answers` in turn. */
  subscribe(push: TestPushServer, userId: string, answers?: Answer[]): Promise<TestSubscription>;
  close(): Promise<void>;
}

/**
 * What a test may inject into the service besides its configuration, and the database and vhost
 * when it made them first (another service runs on them too); the harness drops them at close.
 */
export type HarnessDeps = Pick<PushServiceDeps, 'clock' | 'runPoller'> & { db?: TestDatabase; vhost?: TestVhost };

/** push-service in-process on its own vhost and database, built by its own builder. */
export async function startHarness(
  name: string,
  env: Record<string, string> = {},
  deps: HarnessDeps = {},
): Promise<Harness> {
  const { db: givenDb, vhost: givenVhost, ...serviceDeps } = deps;
  const [db, vhost] = await Promise.all([
    givenDb ?? createTestDatabase(`push_${name}`),
    givenVhost ?? createTestVhost(`push-${name}`),
  ]);
  const config = loadPushConfig({
    DATABASE_URL: db.url,
    AMQP_URL: vhost.url,
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SHUTDOWN_TIMEOUT_MS: '3000',
    PUBLIC_BASE_URL,
    PUSH_ALLOW_INSECURE_LOCALHOST: 'true',
    PUSH_POLL_INTERVAL_MS: '50',
    PUSH_REQUEST_TIMEOUT_MS: '5000',
    PUSH_LEASE_MS: '10000',
    ...env,
  });
  const registry = new Registry();
  const svc = createPushService(config, {
    logger: testLogger(name),
    registry,
    topology: FAST_RETRY_TOPOLOGY,
    ...serviceDeps,
  });
  await svc.start();
  await svc.app.ready();
  const harness: Harness = {
    svc,
    config,
    db,
    vhost,
    token: (sub) => svc.app.jwt.sign({ sub }),
    adminToken: (operator = 'operator') => OPERATORS.token(operator, 'push-service'),
    publish: (event) => svc.messaging.publisher.publish(event),
    async metric(metricName, labels = {}) {
      const m = registry.getSingleMetric(metricName);
      if (!m) return 0;
      const { values } = await m.get();
      return values
        .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
        .reduce((sum, v) => sum + v.value, 0);
    },
    async publishAndWait(...events) {
      const before = await harness.metric('messaging_succeeded_total');
      for (const e of events) await harness.publish(e);
      await eventually(
        `${events.length} handled`,
        async () => (await harness.metric('messaging_succeeded_total')) - before >= events.length,
      );
    },
    async subscribe(push, userId, answers = []) {
      const sub = push.subscribe(answers);
      const res = await svc.app.inject({
        method: 'POST',
        url: `/v1/users/${userId}/push-subscriptions`,
        headers: bearer(svc.app.jwt.sign({ sub: userId })),
        payload: sub.json,
      });
      if (res.statusCode !== 201) throw new Error(`subscribing ${userId}: ${res.statusCode} ${res.body}`);
      return sub;
    },
    async close() {
      await svc.stop();
      await svc.app.close();
      await Promise.all([db.drop(), vhost.delete()]);
    },
  };
  return harness;
}

let seq = 0;

/** A notification.created as notification-service publishes it. */
export function notificationCreated(
  n: Partial<EventOf<'notification.created'>['data']> & { userId: string },
): EventOf<'notification.created'> {
  seq += 1;
  const type = n.type ?? 'mention';
  const notificationId = n.notificationId ?? `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`;
  return buildEvent(
    'notification.created',
    {
      notificationId,
      type,
      idempotencyKey: n.idempotencyKey ?? `${type}:c-${seq}:${n.userId}`,
      actorId: 'bob',
      resourceType: type === 'security_alert' ? 'security_alert' : 'comment',
      resourceId: `c-${seq}`,
      emailChannel: 'immediate',
      excerpt: 'What do you think?',
      ...n,
    },
    { producer: 'notification-service' },
  );
}

export function withdrawn(created: EventOf<'notification.created'>): EventOf<'notification.withdrawn'> {
  const d = created.data;
  return buildEvent(
    'notification.withdrawn',
    {
      notificationId: d.notificationId,
      userId: d.userId,
      type: d.type,
      idempotencyKey: d.idempotencyKey,
      subject: 'comment:c-x',
    },
    { producer: 'notification-service' },
  );
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
