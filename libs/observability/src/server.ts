import underPressurePlugin, { type FastifyUnderPressureOptions } from '@fastify/under-pressure';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { registerErrorHandler } from './http-errors';
import type { Logger } from './logger';
import type { ReadinessChecks, ReadinessProbe } from './readiness';

export type UnderPressureOptions = Omit<FastifyUnderPressureOptions, 'exposeStatusRoute'>;

export interface ServerOptions {
  logger: Logger;
  registry: Registry;
  /** Feeds GET /readyz; typically `readinessState().checks`. */
  readiness: ReadinessProbe;
  /** Register /healthz, /readyz and /metrics (default true). */
  healthRoutes?: boolean;
  /**
   * Opt-in load shedding for HTTP APIs: past these limits app routes answer 503 with Retry-After.
   * The ops routes are exempt: a liveness failure under load would make Kubernetes restart a busy
   * but healthy pod, and /metrics is what shows the overload.
   */
  underPressure?: UnderPressureOptions;
  /** A readiness probe slower than this counts as not ready (default 2000 ms). */
  readinessTimeoutMs?: number;
  /**
   * Extra information shown in /readyz that never decides readiness (e.g. a circuit breaker's
   * state: an open breaker affects every replica alike, so taking a pod out of rotation fixes nothing).
   */
  readinessDetails?: () => Record<string, unknown>;
  /** Other fastify options (trustProxy, bodyLimit, ...); the logger is always `logger`. */
  fastifyOptions?: Omit<FastifyServerOptions, 'logger' | 'loggerInstance'>;
}

/** Route options shared by the ops routes. */
const OPS_ROUTE = {
  // Probes and scrapes arrive every few seconds; at info they would drown the useful lines.
  // Errors on these routes are still logged.
  logLevel: 'warn' as const,
  // A nullish result from a route-level pressureHandler lets the request through.
  config: { pressureHandler: () => undefined },
};

/**
 * Builds the HTTP server without listening (tests use `app.inject()`; `listen()` starts it).
 * Errors keep fastify's `{ statusCode, error, message }` shape: catalogue errors (http-errors.ts)
 * add their `code`, everything else is answered by fastify's default handler.
 */
export function buildServer(options: ServerOptions): FastifyInstance {
  // Typed as fastify's base logger so apps get a plain `FastifyInstance`; at runtime it is our pino.
  const loggerInstance: FastifyBaseLogger = options.logger;
  const app = Fastify({ ...options.fastifyOptions, loggerInstance });

  registerErrorHandler(app);
  if (options.underPressure) registerUnderPressure(app, options.registry, options.underPressure);
  if (options.healthRoutes !== false) registerOpsRoutes(app, options);
  return app;
}

export function registerOpsRoutes(
  app: FastifyInstance,
  options: Pick<ServerOptions, 'registry' | 'readiness' | 'readinessTimeoutMs' | 'readinessDetails'>,
): void {
  const { registry, readiness } = options;
  const timeoutMs = options.readinessTimeoutMs ?? 2000;

  // Liveness: the process answers. Never checks dependencies, or a broker outage restarts every pod.
  app.get('/healthz', OPS_ROUTE, async () => ({ status: 'ok' }));

  app.get('/readyz', OPS_ROUTE, async (request, reply) => {
    let checks: ReadinessChecks;
    try {
      checks = await withTimeout(Promise.resolve().then(() => readiness()), timeoutMs);
    } catch (err) {
      request.log.warn({ err }, 'readiness probe failed');
      return reply.code(503).send({ status: 'not_ready', checks: {} });
    }
    const ready = Object.values(checks).every(Boolean);
    const details = options.readinessDetails?.();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks, ...(details ? { details } : {}) });
  });

  app.get('/metrics', OPS_ROUTE, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}

function registerUnderPressure(app: FastifyInstance, registry: Registry, opts: UnderPressureOptions): void {
  const shed =
    (registry.getSingleMetric('http_requests_shed_total') as Counter<'reason'> | undefined) ??
    new Counter({
      name: 'http_requests_shed_total',
      help: 'HTTP requests answered 503 by load shedding, by the limit that was exceeded',
      labelNames: ['reason'],
      registers: [registry],
    });
  const retryAfter = opts.retryAfter ?? 10;

  app.register(underPressurePlugin, {
    // Replying here (instead of the plugin's default thrown error) avoids an error-level log line
    // per shed request, which would add load exactly when the process is overloaded.
    pressureHandler: (_request, reply, type) => {
      shed.inc({ reason: type });
      reply
        .code(503)
        .header('Retry-After', String(retryAfter))
        .send({ statusCode: 503, error: 'Service Unavailable', message: 'Service Unavailable: server under pressure' });
    },
    ...opts,
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`readiness probe timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts listening on all interfaces (containers need 0.0.0.0); returns the bound address. */
export async function listen(app: FastifyInstance, port: number, host = '0.0.0.0'): Promise<string> {
  return app.listen({ port, host });
}
