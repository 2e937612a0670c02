import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { commonConfig, loadConfig } from '@community/config';
import { validate as validateEnvelope } from '@community/contracts';
import { createPgPool } from '@community/db';
import { createMessaging, PermanentError, type Messaging, type Topology } from '@community/messaging';
import { authGuards, authSettingsFrom, buildServer, readinessState, registerAuth } from '@community/service';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  testOperators,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createDlqConsole, type DlqConsole } from '../src/dlq';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
/** The operators ADMIN_KEYS trusts here (each with a key of their own): the ops CLI test signs as one. */
export const OPERATORS = testOperators();
export const EXCHANGE = 'shop.events';
/** Two queues bound to the same routing key: a replay must reach only the one the message failed on. */
export const WORK = 'shop.orders';
export const OTHER = 'shop.audit';
/** No consumer and room for one message: the broker itself dead-letters the overflow (reason maxlen). */
export const TINY = 'shop.tiny';

export const TOPOLOGY: Topology = {
  exchanges: [{ name: EXCHANGE, type: 'topic' }],
  deadLetterExchange: 'shop.dlx',
  policyPrefix: 'shop',
  queues: [
    { name: WORK, bindings: [{ exchange: EXCHANGE, routingKeys: ['order.placed'] }], retryDelaysMs: [] },
    { name: OTHER, bindings: [{ exchange: EXCHANGE, routingKeys: ['order.placed'] }], retryDelaysMs: [] },
    { name: TINY, bindings: [{ exchange: EXCHANGE, routingKeys: ['order.tiny'] }], retryDelaysMs: [], maxLength: 1 },
  ],
};

export interface Order {
  id: string;
  type: string;
  /** An order the consumer refuses while `poisoned` holds its reason. */
  reason?: string;
}

/**
 * The reconciler's DLQ console over a small test system: a topology of two queues, a consumer on
 * each with an inbox (processed once per message id, every delivery recorded), and the console
 * built with `createDlqConsole` on the same vhost and database, served by a fastify app with the
 * reconciler's admin guard.
 */
export interface DlqHarness {
  db: TestDatabase;
  vhost: TestVhost;
  pool: Pool;
  app: FastifyInstance;
  console: DlqConsole;
  messaging: Messaging;
  registry: Registry;
  /** Reasons the consumer of WORK fails with, by order id (PermanentError); delete one to "fix" it. */
  poisoned: Map<string, string>;
  /** A user token for `sub`; with the `admin` scope, the admin token of operator `sub` (EdDSA, own key). */
  token(sub: string, scope?: string): string;
  /** Headers with operator `sub`'s admin token (default alice). */
  adminHeaders(sub?: string): Record<string, string>;
  publish(order: Order): Promise<void>;
  /** Publishes orders that fail and waits until the console has stored them all. */
  deadLetter(orders: Array<Order & { reason: string }>): Promise<void>;
  /** Times each order id was processed by the inbox of `queue` (0 or 1) and delivered. */
  processed(queue: string, orderId: string): Promise<{ processed: number; deliveries: number }>;
  /** The clock the app checks token expiry against: moved ahead instead of waiting a token out. */
  clock: { advance(ms: number): void; reset(): void };
  close(): Promise<void>;
}

export interface DlqHarnessOptions {
  replayStaleMs?: number;
  replaySweepMs?: number;
  /** Routes added to the app beside the console's (e.g. a stand-in for another part's endpoint). */
  extraRoutes?: (app: FastifyInstance) => void;
}

export async function startDlqHarness(prefix: string, options: DlqHarnessOptions = {}): Promise<DlqHarness> {
  const [db, vhost] = await Promise.all([createTestDatabase(`rc_${prefix}`), createTestVhost(`rc-${prefix}`)]);
  const pool = createPgPool(db.url, { max: 8 });
  await pool.query(`
    CREATE TABLE test_inbox (queue text NOT NULL, message_id text NOT NULL, processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (queue, message_id));
    CREATE TABLE test_deliveries (id bigserial PRIMARY KEY, queue text NOT NULL, message_id text NOT NULL, replay_operation text);
  `);
  const logger = testLogger(prefix);
  const registry = new Registry();
  const poisoned = new Map<string, string>();
  const messaging = createMessaging({
    url: vhost.url,
    service: `test-${prefix}`,
    topology: TOPOLOGY,
    logger,
    registry,
    classifiers: [],
    policyCheckIntervalMs: 1000,
  });
  for (const queue of [WORK, OTHER]) {
    messaging.consume<Order>({
      queue,
      name: `${queue}-handler`,
      validate: (body) => {
        // A body that is not JSON fails as the contracts lib says it (a ContractError: permanent).
        const checked = validateEnvelope(body);
        if (!checked.ok && checked.error.code === 'MALFORMED_JSON') throw checked.error;
        return JSON.parse(body.toString('utf8')) as Order;
      },
      handle: async (order, ctx) => {
        await pool.query(`INSERT INTO test_deliveries (queue, message_id) VALUES ($1, $2)`, [queue, ctx.eventId]);
        const reason = queue === WORK ? poisoned.get(order.id) : undefined;
        if (reason) throw new PermanentError(reason);
        // The inbox: a message id is processed once, whatever the number of deliveries.
        const res = await pool.query(
          `INSERT INTO test_inbox (queue, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
          [queue, ctx.eventId],
        );
        return res.rowCount === 1 ? 'processed' : 'duplicate';
      },
    });
  }

  const app = buildServer({ logger, registry, readiness: readinessState().checks });
  // The reconciler's own auth rules (its name is the admin tokens' audience), config as in production.
  let clockOffsetMs = 0;
  registerAuth(
    app,
    authSettingsFrom(
      'reconciler',
      loadConfig(commonConfig('reconciler'), { JWT_SECRET, ADMIN_KEYS: OPERATORS.adminKeys }),
    ),
    () => Date.now() + clockOffsetMs,
  );
  const dlq = createDlqConsole({
    pool,
    amqpUrl: vhost.url,
    topology: TOPOLOGY,
    logger,
    registry,
    adminOnly: authGuards({ prefix: 'RC_', resource: 'data' }).adminOnly,
    ingestRetryMs: 500,
    replayStaleMs: options.replayStaleMs,
    replaySweepMs: options.replaySweepMs,
  });
  await app.register(dlq.routes);
  options.extraRoutes?.(app);
  await app.ready();
  await messaging.start();
  await dlq.start();

  const token = (sub: string, scope?: string) =>
    scope?.split(' ').includes('admin')
      ? OPERATORS.token(sub, 'reconciler')
      : app.jwt.sign(scope ? { sub, scope } : { sub });
  const publish = async (order: Order) => {
    await messaging.publisher.publish(
      { ...order, version: 1, occurredAt: new Date().toISOString(), correlationId: order.id },
      { exchange: EXCHANGE, routingKey: 'order.placed' },
    );
  };

  const h: DlqHarness = {
    clock: {
      advance: (ms) => {
        clockOffsetMs += ms;
      },
      reset: () => {
        clockOffsetMs = 0;
      },
    },
    db,
    vhost,
    pool,
    app,
    console: dlq,
    messaging,
    registry,
    poisoned,
    token,
    adminHeaders: (sub = 'alice') => ({ authorization: `Bearer ${token(sub, 'admin')}` }),
    publish,
    async deadLetter(orders) {
      for (const o of orders) poisoned.set(o.id, o.reason);
      for (const o of orders) await publish({ id: o.id, type: o.type });
      await eventually(
        `${orders.length} dead letters stored`,
        async () => {
          const { rows } = await pool.query(`SELECT count(*)::int AS n FROM dlq_messages WHERE message_id = ANY($1)`, [
            orders.map((o) => o.id),
          ]);
          return rows[0].n === orders.length;
        },
        15_000,
        50,
      );
    },
    async processed(queue, orderId) {
      const [inbox, deliveries] = await Promise.all([
        pool.query(`SELECT count(*)::int AS n FROM test_inbox WHERE queue = $1 AND message_id = $2`, [queue, orderId]),
        pool.query(`SELECT count(*)::int AS n FROM test_deliveries WHERE queue = $1 AND message_id = $2`, [
          queue,
          orderId,
        ]),
      ]);
      return { processed: inbox.rows[0].n, deliveries: deliveries.rows[0].n };
    },
    async close() {
      await dlq.stop();
      await messaging.stop(2000);
      await app.close();
      await pool.end();
      await Promise.all([db.drop(), vhost.delete()]);
    },
  };
  return h;
}

export const orderId = (): string => randomUUID();
