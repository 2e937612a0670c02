import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Logger } from '@community/observability';
import type { Topology } from '@community/messaging';
import { testLogger, type TestDatabase, type TestVhost } from '@community/testing';
import { loadDemoConfig } from '../src/config';
import { createDemoService, type DemoService } from '../src/service';

export const JWT_SECRET = 'test-secret-for-demo-community-api-0123456789';

/**
 * The service as main.ts builds it, on a test database (and vhost, for tests that start it: without
 * start() nothing connects to the broker). No built-in traffic: tests make their own; no write rate limit in practice.
 */
export function testService(
  db: TestDatabase,
  options: {
    vhost?: TestVhost;
    topology?: Topology;
    env?: Record<string, string>;
    logger?: Logger;
    clock?: () => Date;
  } = {},
): DemoService {
  const config = loadDemoConfig({
    DATABASE_URL: db.url,
    AMQP_URL: options.vhost?.url ?? 'amqp://guest:guest@127.0.0.1:5672',
    JWT_SECRET,
    PORT: '0',
    LOG_LEVEL: 'silent',
    DEMO_TRAFFIC_RATE: '0',
    // The load tests write thousands of rows from one address; rate-limit.test.ts sets a small limit.
    DEMO_WRITE_RATE_LIMIT: '1000000',
    ...options.env,
  });
  return createDemoService(config, {
    logger: options.logger ?? testLogger(),
    registry: new Registry(),
    topology: options.topology,
    clock: options.clock,
  });
}

/** A logger that keeps what it writes, to read a line back (parsed) instead of guessing from outside. */
export function recordingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

export interface OutboxRow {
  event_type: string;
  aggregate_id: string;
  payload: { id: string; type: string; correlationId: string; producer: string; data: Record<string, unknown> };
}

/** The outbox rows one request wrote: its correlation id (the x-correlation-id it answered with) is on each. */
export async function eventsOf(
  pool: Pool,
  correlationId: string | string[] | number | undefined,
): Promise<OutboxRow[]> {
  const { rows } = await pool.query<OutboxRow>(
    `SELECT event_type, aggregate_id, payload FROM outbox_messages WHERE payload->>'correlationId' = $1 ORDER BY id`,
    [String(correlationId)],
  );
  return rows;
}

export async function count(pool: Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0].n;
}

export async function createUsers(app: FastifyInstance, ids: string[]): Promise<void> {
  for (const id of ids) {
    const name = id.charAt(0).toUpperCase() + id.slice(1);
    const res = await app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: { id, email: `${id}@example.test`, displayName: `${name} Tester` },
    });
    if (res.statusCode >= 300) throw new Error(`creating ${id}: ${res.statusCode} ${res.body}`);
  }
}
