import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { testLogger } from '@community/testing';
import { buildApp } from '../src/app';

export const JWT_SECRET = 'test-secret-for-demo-community-api-0123456789';

export function testApp(pool: Pool, readiness: () => Record<string, boolean> = () => ({ test: true })): FastifyInstance {
  return buildApp({ pool, logger: testLogger(), registry: new Registry(), readiness, jwtSecret: JWT_SECRET });
}

export interface OutboxRow {
  event_type: string;
  aggregate_id: string;
  payload: { id: string; type: string; correlationId: string; producer: string; data: Record<string, unknown> };
}

/** The outbox rows one request wrote: its correlation id (the x-correlation-id it answered with) is on each. */
export async function eventsOf(pool: Pool, correlationId: string | string[] | number | undefined): Promise<OutboxRow[]> {
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
    const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { id, email: `${id}@example.test`, displayName: `${name} Tester` } });
    if (res.statusCode >= 300) throw new Error(`creating ${id}: ${res.statusCode} ${res.body}`);
  }
}
