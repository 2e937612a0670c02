import { randomUUID } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import { CorrelationIdSchema } from '@community/contracts';
import { pgUnavailable } from '@community/db';
import { buildServer, type Logger, type ReadinessProbe } from '@community/observability';
import { registerContentRoutes } from './http/content-routes';
import { registerSecurityAlertRoutes } from './http/security-alert-routes';
import { ERRORS } from './http/errors';
import { refuseUnstorableText } from './http/text-guard';
import { registerUserRoutes } from './http/user-routes';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  /** Behind GET /readyz: database reachable, broker connected, relay healthy. */
  readiness: ReadinessProbe;
  /** Shown in /readyz without deciding it (e.g. the broker blocking publishes: a broker-wide alarm). */
  readinessDetails?: () => Record<string, unknown>;
  /** Verifies `Authorization: Bearer` tokens (HS256, `sub` = acting user). */
  jwtSecret: string;
}

const CORRELATION_HEADER = 'x-correlation-id';
/** The envelope's bound on correlationId: the id becomes every event's correlationId. */
const CORRELATION_ID_MAX_LENGTH = CorrelationIdSchema.maxLength ?? 256;

/**
 * The demo community API without listening (tests use `app.inject()`). Every write and the events
 * it causes are committed in one transaction through the outbox; the relay publishes them.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.readiness,
    readinessDetails: deps.readinessDetails,
    // Postgres restarting or unreachable: 503 + Retry-After, not 500 (the client retries).
    dependencyErrors: [pgUnavailable],
    fastifyOptions: {
      // The request id is the correlation id of every event the request causes: a caller's
      // x-correlation-id is kept, so one id follows an action from HTTP to the last consumer.
      requestIdHeader: CORRELATION_HEADER,
      genReqId: () => randomUUID(),
      bodyLimit: 64 * 1024,
    },
  });
  app.register(fastifyJwt, { secret: deps.jwtSecret, verify: { algorithms: ['HS256'] } });
  // The id goes into every event's correlationId, which the contract bounds: refused here with a 400,
  // it would otherwise fail the event's validation inside the transaction (a 500).
  app.addHook('onRequest', async (request) => {
    const given = request.headers[CORRELATION_HEADER];
    if (given !== undefined && (given.length === 0 || given.length > CORRELATION_ID_MAX_LENGTH)) {
      throw ERRORS.CORRELATION_ID_INVALID(String(CORRELATION_ID_MAX_LENGTH));
    }
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header(CORRELATION_HEADER, request.id);
  });
  refuseUnstorableText(app);
  registerUserRoutes(app, deps.pool);
  registerContentRoutes(app, deps.pool);
  registerSecurityAlertRoutes(app, deps.pool);
  return app;
}
