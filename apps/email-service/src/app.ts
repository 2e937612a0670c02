import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { pgUnavailable } from '@community/db';
import { buildServer, type ReadinessProbe } from '@community/service';
import { registerFlowControlRoute, type FlowControl } from './http/flow-control';
import { registerUnsubscribeRoutes, type UnsubscribeRouteDeps } from './http/unsubscribe';

export interface AppDeps {
  logger: Logger;
  registry: Registry;
  /** Readiness checks; all true = ready. */
  checks: ReadinessProbe;
  /** Extra /readyz information that does not decide readiness (breaker state). */
  details: () => Record<string, unknown>;
  /** GET /v1/flow-control: breakers and rate limits, with the queues they hold back. */
  flowControl: () => FlowControl;
  unsubscribe: UnsubscribeRouteDeps;
}

/** The HTTP surface, without listening: ops routes and the unsubscribe endpoint. */
export function buildApp(deps: AppDeps): FastifyInstance {
  // The breaker's state goes in `details`, not among the checks: a paused email queue is the
  // intended behaviour during an outage, and an unready pod would also hide the unsubscribe endpoint.
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.checks,
    readinessDetails: deps.details,
    dependencyErrors: [pgUnavailable],
  });
  registerFlowControlRoute(app, deps.flowControl);
  registerUnsubscribeRoutes(app, deps.unsubscribe);
  return app;
}
