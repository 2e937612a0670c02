import { randomUUID } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import { CorrelationIdSchema } from '@community/contracts';
import { pgUnavailable } from '@community/db';
import { type Logger } from '@community/observability';
import { buildServer, registerAuth, type AuthSettings, type ReadinessProbe } from '@community/service';
import { actorHooks } from './http/actor';
import { checkIdempotencyKey, type AnswerOnce } from './http/answer-once';
import { registerContentRoutes } from './http/content-routes';
import { registerSecurityAlertRoutes } from './http/security-alert-routes';
import { ERRORS } from './http/errors';
import { refuseUnstorableText } from './http/text-guard';
import { registerUserRoutes } from './http/user-routes';
import type { WriteGuards } from './http/write-guards';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  /** Behind GET /readyz: database reachable, broker connected, relay healthy. */
  readiness: ReadinessProbe;
  /** Shown in /readyz without deciding it (e.g. the broker blocking publishes: a broker-wide alarm). */
  readinessDetails?: () => Record<string, unknown>;
  /** Who may call (JWT_SECRET, USER_TOKEN_*, ADMIN_KEYS, …): `authSettingsFrom(SERVICE_NAME, config)`. */
  auth: AuthSettings;
  /** NODE_ENV=production: x-user-id refused, tokens required (http/actor.ts). */
  production: boolean;
  /** Who may raise security alerts with a service token, and its public key (required in production). */
  securityAlerts: { issuer: string; verifyKey?: string };
  /** Writes per actor (user, service, or client IP when anonymous) in each window; then 429. */
  writeRateLimit: { max: number; windowMs: number };
  /** Producer-side dedup: each write route answers a retry with its first answer (http/answer-once.ts). */
  answerOnce: AnswerOnce;
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
  registerAuth(app, deps.auth);
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
  // The API in a scope of its own: its rate limit applies to its routes, not to the ops routes
  // buildServer added.
  app.register(async (api) => {
    const { max, windowMs } = deps.writeRateLimit;
    await api.register(fastifyRateLimit, {
      global: false,
      max,
      timeWindow: windowMs,
      // One budget per actor across every write route; the actor hook runs first (route onRequest).
      keyGenerator: (request) => request.actor?.rateKey ?? `ip:${request.ip}`,
      errorResponseBuilder: (_request, context) =>
        ERRORS.RATE_LIMITED(
          String(context.max),
          `${windowMs / 1000} s`,
          String(Math.max(1, Math.ceil(context.ttl / 1000))),
        ),
    });
    const limit = api.rateLimit() as unknown as onRequestHookHandler;
    const hooks = actorHooks({ production: deps.production, securityAlerts: deps.securityAlerts });
    // Who acts, their budget, then their Idempotency-Key (checked before anything is read or written).
    const keyCheck = checkIdempotencyKey as onRequestHookHandler;
    const guards: WriteGuards = {
      userWrite: [hooks.userWrite as onRequestHookHandler, limit, keyCheck],
      profileWrite: [hooks.profileWrite as onRequestHookHandler, limit, keyCheck],
      securityAlert: [hooks.securityAlert as onRequestHookHandler, limit, keyCheck],
    };
    const routes = { pool: deps.pool, guards, answerOnce: deps.answerOnce };
    registerUserRoutes(api, routes);
    registerContentRoutes(api, routes);
    registerSecurityAlertRoutes(api, routes);
  });
  return app;
}
