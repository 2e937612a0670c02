import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface OpsOptions {
  registry: Registry;
  /** Every value must be true for the pod to be ready. */
  checks: () => Record<string, boolean>;
  /** Shown in /readyz, never decides readiness (e.g. the SMTP breaker). */
  details: () => Record<string, unknown>;
}

const OPS_ROUTE = { logLevel: 'warn' as const };

/**
 * /healthz, /readyz and /metrics, as libs/observability registers them, plus a `details` object in
 * /readyz. The breaker's state is there and not among the checks on purpose: an open breaker means
 * the provider is down for every replica alike, so taking this pod out of rotation would fix
 * nothing and would hide the unsubscribe endpoint; the paused queue is the intended behaviour.
 */
export function registerOpsRoutes(app: FastifyInstance, options: OpsOptions): void {
  app.get('/healthz', OPS_ROUTE, async () => ({ status: 'ok' }));

  app.get('/readyz', OPS_ROUTE, async (_request, reply) => {
    const checks = options.checks();
    const ready = Object.values(checks).every(Boolean);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks, details: options.details() });
  });

  app.get('/metrics', OPS_ROUTE, async (_request, reply) => {
    const body = await options.registry.metrics();
    return reply.type(options.registry.contentType).send(body);
  });
}
