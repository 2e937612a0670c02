import { randomUUID } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import { buildServer, type Logger, type ReadinessProbe } from '@community/observability';
import { registerContentRoutes } from './routes/content';
import { registerSecurityAlertRoutes } from './routes/security-alerts';
import { registerUserRoutes } from './routes/users';
import { refuseUnstorableText } from './text-guard';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  /** Behind GET /readyz: database reachable, broker connected, relay healthy. */
  readiness: ReadinessProbe;
  /** Verifies `Authorization: Bearer` tokens (HS256, `sub` = acting user). */
  jwtSecret: string;
}

const CORRELATION_HEADER = 'x-correlation-id';

/**
 * The demo community API without listening (tests use `app.inject()`). Every write and the events
 * it causes are committed in one transaction through the outbox; the relay publishes them.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.readiness,
    fastifyOptions: {
      // The request id is the correlation id of every event the request causes: a caller's
      // x-correlation-id is kept, so one id follows an action from HTTP to the last consumer.
      requestIdHeader: CORRELATION_HEADER,
      genReqId: () => randomUUID(),
      bodyLimit: 64 * 1024,
    },
  });
  app.register(fastifyJwt, { secret: deps.jwtSecret, verify: { algorithms: ['HS256'] } });
  app.addHook('onSend', async (request, reply) => {
    reply.header(CORRELATION_HEADER, request.id);
  });
  refuseUnstorableText(app);
  registerUserRoutes(app, deps.pool);
  registerContentRoutes(app, deps.pool);
  registerSecurityAlertRoutes(app, deps.pool);
  return app;
}
