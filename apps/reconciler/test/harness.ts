import { Registry } from 'prom-client';
import type { Topology } from '@community/messaging';
import {
  createTestDatabase,
  createTestVhost,
  testLogger,
  testOperators,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { loadReconcilerConfig, type ReconcilerConfig } from '../src/config';
import { createReconcilerService, type ReconcilerService } from '../src/service';

export const JWT_SECRET = 'test-secret-0123456789-abcdefghijklmnop';
/** The operators ADMIN_KEYS trusts here (each with a key of their own). */
export const OPERATORS = testOperators();

/** The reconciler's configuration against a test database and vhost (no breaker source: no email-service here). */
export function testConfig(
  db: TestDatabase,
  vhost: TestVhost | undefined,
  env: Record<string, string> = {},
): ReconcilerConfig {
  return loadReconcilerConfig({
    DATABASE_URL: db.url,
    AMQP_URL: vhost?.url ?? 'amqp://guest:guest@127.0.0.1:5672',
    JWT_SECRET,
    ADMIN_KEYS: OPERATORS.adminKeys,
    PORT: '0',
    LOG_LEVEL: 'silent',
    COUNTER_BATCH_SIZE: '50',
    BREAKER_METRICS_URLS: 'none',
    SHUTDOWN_TIMEOUT_MS: '3000',
    ...env,
  });
}

export interface Reconciler {
  svc: ReconcilerService;
  registry: Registry;
  /** The admin token of operator `sub` (default); with another scope, a user token of user `sub`. */
  token(sub?: string, scope?: string): string;
  close(): Promise<void>;
}

/** One reconciler built by its own builder; a second one on the same database is a second replica. */
export async function startReconciler(
  db: TestDatabase,
  vhost: TestVhost | undefined,
  options: { env?: Record<string, string>; topology?: Topology; start?: boolean; dlqConsole?: boolean } = {},
): Promise<Reconciler> {
  const registry = new Registry();
  const svc = createReconcilerService(testConfig(db, vhost, options.env), {
    logger: testLogger('reconciler'),
    registry,
    topology: options.topology,
    runScheduler: false,
    messaging: vhost !== undefined,
    dlqConsole: options.dlqConsole,
  });
  await svc.app.ready();
  if (options.start !== false) await svc.start();
  return {
    svc,
    registry,
    token: (sub = 'operator', scope = 'admin') =>
      scope.split(' ').includes('admin') ? OPERATORS.token(sub, 'reconciler') : svc.app.jwt.sign({ sub, scope }),
    async close() {
      await svc.stop();
      await svc.app.close();
    },
  };
}

export { createTestDatabase, createTestVhost };
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Counter rows beside their recount, for assertions. */
export async function countersAndRecount(
  svc: ReconcilerService,
): Promise<{ user_id: string; counter: number; recount: number }[]> {
  const res = await svc.pool.query<{ user_id: string; counter: number; recount: number }>(
    `SELECT c.user_id, c.unread_count AS counter,
            (SELECT count(*)::int FROM notification_items n WHERE n.user_id = c.user_id AND n.in_app AND n.read_at IS NULL) AS recount
       FROM notification_counters c ORDER BY c.user_id`,
  );
  return res.rows;
}

/** `users` users with `perUser` unread in-app notifications each, counters exact. */
export async function seedInboxes(
  svc: ReconcilerService,
  users: number,
  perUser: number,
  prefix = 'u',
): Promise<string[]> {
  const ids = Array.from({ length: users }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
  await svc.pool.query(
    `INSERT INTO notification_counters (user_id, unread_count, version) SELECT u, $2, 1 FROM unnest($1::text[]) AS u`,
    [ids, perUser],
  );
  await svc.pool.query(
    `INSERT INTO notification_items (user_id, type, idempotency_key, slot_key, resource_type, resource_id, email_channel, source_event_id, created_version, state_version)
     SELECT u, 'reaction', u || ':' || g, u || ':' || g, 'post', 'p', 'off', gen_random_uuid()::text, 1, 1
       FROM unnest($1::text[]) AS u, generate_series(1, $2) AS g`,
    [ids, perUser],
  );
  return ids;
}
