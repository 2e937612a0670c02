import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
} from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import { registerErrorHandler, type ErrorHandlerOptions } from './http-errors';
import { registerHttpTracing, tracingEnabled } from '@community/observability';
import type { Logger } from '@community/observability';
import { errorResponses, OpenObject, registerOpenApi, textResponse } from './openapi';
import type { ReadinessChecks, ReadinessProbe } from './readiness';

export interface ServerOptions extends ErrorHandlerOptions {
  logger: Logger;
  registry: Registry;
  /** Feeds GET /readyz; typically `readinessState().checks`. */
  readiness: ReadinessProbe;
  /** A readiness probe slower than this counts as not ready (default 2000 ms). */
  readinessTimeoutMs?: number;
  /**
   * Extra information shown in /readyz that never decides readiness (e.g. a circuit breaker's
   * state: an open breaker affects every replica alike, so taking a pod out of rotation fixes nothing).
   */
  readinessDetails?: () => Record<string, unknown>;
  /** Other fastify options (trustProxy, bodyLimit, ...); the logger is always `logger`. */
  fastifyOptions?: Omit<FastifyServerOptions, 'logger' | 'loggerInstance'>;
  /** The title and description of GET /openapi.json; the title defaults to the logger's `service`. */
  openapi?: { title?: string; description?: string };
}

/** Route options shared by the ops routes. */
const OPS_ROUTE = {
  // Probes and scrapes arrive every few seconds; at info they would drown the useful lines.
  // Errors on these routes are still logged.
  logLevel: 'warn' as const,
};

const OPS_TAGS = ['ops'];

const ReadinessBody = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  checks: Type.Object(
    {},
    {
      additionalProperties: Type.Boolean(),
      description: 'each dependency by name (accepting, database, amqp, consumers, relay, …): true when it answers',
    },
  ),
  details: Type.Optional(
    OpenObject({ description: 'information that never decides readiness (e.g. an open SMTP breaker)' }),
  ),
});

/** The ops routes' schemas: what /healthz, /readyz and /metrics answer (docs/CONTRACT.md). */
const OPS_SCHEMAS = {
  healthz: {
    tags: OPS_TAGS,
    summary: 'Liveness: the process answers (never checks dependencies)',
    response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errorResponses() },
  },
  readyz: {
    tags: OPS_TAGS,
    summary: 'Readiness: 200 when every check holds, 503 naming the failing ones',
    response: {
      200: { ...ReadinessBody, description: 'Ready' },
      503: { ...ReadinessBody, description: 'Not ready: a check is false, or the probe failed (checks empty)' },
      ...errorResponses(),
    },
  },
  metrics: {
    tags: OPS_TAGS,
    summary: 'Prometheus metrics (text exposition format)',
    response: { 200: textResponse('text/plain', 'Prometheus text format 0.0.4'), ...errorResponses() },
  },
};

/**
 * Builds the HTTP server with /healthz, /readyz and /metrics, without listening (tests use
 * `app.inject()`; `listen()` starts it).
 * Errors keep fastify's `{ statusCode, error, message }` shape: catalogue errors (http-errors.ts)
 * add their `code`; an error a `dependencyErrors` classifier (or node's network codes) recognises
 * is `503 DEPENDENCY_UNAVAILABLE` with `Retry-After`; everything else is answered by fastify's
 * default handler.
 */
export function buildServer(options: ServerOptions): FastifyInstance {
  // Typed as fastify's base logger so apps get a plain `FastifyInstance`; at runtime it is our pino.
  const loggerInstance: FastifyBaseLogger = options.logger;
  // fastify logs two lines per request at info ("incoming request", "request completed"): twenty
  // minutes of `npm start` with the demo traffic made 24,096 of them, burying the lines that matter.
  // One line per request instead, at debug (LOG_LEVEL=debug to see them); errors are logged by the
  // error handler whatever the level. (Through a LogController: fastify 5.12 deprecated the
  // top-level `disableRequestLogging`, and its FSTDEP023 warning filled every test run's log.)
  const app = Fastify({
    logController: new LogController({ disableRequestLogging: true }),
    ...options.fastifyOptions,
    loggerInstance,
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      {
        req: { method: request.method, url: request.url },
        res: { statusCode: reply.statusCode },
        responseTimeMs: Math.round(reply.elapsedTime),
      },
      'request completed',
    );
  });
  // First hook, so everything after it runs in the request's span; absent when tracing is off.
  if (tracingEnabled()) registerHttpTracing(app);
  registerErrorHandler(app, {
    dependencyErrors: options.dependencyErrors,
    retryAfterSeconds: options.retryAfterSeconds,
  });
  // Before any route: the document learns the routes as they are added (onRoute).
  registerOpenApi(app, {
    title: options.openapi?.title ?? serviceName(options.logger),
    description: options.openapi?.description,
  });
  registerOpsRoutes(app, options);
  return app;
}

function registerOpsRoutes(app: FastifyInstance, options: ServerOptions): void {
  const { registry, readiness } = options;
  const timeoutMs = options.readinessTimeoutMs ?? 2000;

  // Liveness: the process answers. Never checks dependencies, or a broker outage restarts every pod.
  app.get('/healthz', { ...OPS_ROUTE, schema: OPS_SCHEMAS.healthz }, async () => ({ status: 'ok' }));

  app.get('/readyz', { ...OPS_ROUTE, schema: OPS_SCHEMAS.readyz }, async (request, reply) => {
    let checks: ReadinessChecks;
    try {
      checks = await withTimeout(
        Promise.resolve().then(() => readiness()),
        timeoutMs,
      );
    } catch (err) {
      request.log.warn({ err }, 'readiness probe failed');
      return reply.code(503).send({ status: 'not_ready', checks: {} });
    }
    const ready = Object.values(checks).every(Boolean);
    const details = options.readinessDetails?.();
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not_ready', checks, ...(details ? { details } : {}) });
  });

  app.get('/metrics', { ...OPS_ROUTE, schema: OPS_SCHEMAS.metrics }, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}

/** The `service` every line of the logger carries (createLogger's base; a plain pino's `name`), the document's title. */
function serviceName(logger: Logger): string {
  const { service, name } = logger.bindings() as { service?: unknown; name?: unknown };
  for (const candidate of [service, name]) if (typeof candidate === 'string' && candidate.length > 0) return candidate;
  return 'service';
}

/**
 * Rejects when `promise` has not settled within `ms`. The timer is `node:timers/promises`' setTimeout,
 * cancelled through its AbortSignal as soon as the probe settles, so no timer outlives a request.
 */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  const cancel = new AbortController();
  const expired = sleep(ms, undefined, { signal: cancel.signal }).then(() => {
    throw new Error(`readiness probe timed out after ${ms} ms`);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    cancel.abort(); // its AbortError rejects `expired`, which the race has already handled
  }
}

/** Starts listening (on HOST: 127.0.0.1 unless asked; the images set 0.0.0.0); returns the bound address. */
export async function listen(app: FastifyInstance, port: number, host = '127.0.0.1'): Promise<string> {
  return app.listen({ port, host });
}
