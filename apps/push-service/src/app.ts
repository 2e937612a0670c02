import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { pgUnavailable } from '@community/db';
import { buildServer, type AuthSettings, type ReadinessProbe } from '@community/service';
import { registerAuth } from './http/auth';
import { registerPageRoutes } from './http/page-routes';
import { registerSubscriptionRoutes, type SubscriptionRouteDeps } from './http/subscription-routes';

export interface AppDeps extends SubscriptionRouteDeps {
  logger: Logger;
  registry: Registry;
  /** Who may call (JWT_SECRET, ADMIN_KEYS, …): `authSettingsFrom(SERVICE_NAME, config)`. */
  auth: AuthSettings;
  readiness: ReadinessProbe;
  readinessDetails: () => Record<string, unknown>;
}

/** The HTTP API (docs/PUSH.md "Subscriptions API") and the page, built without listening: tests use inject(). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.readiness,
    readinessDetails: deps.readinessDetails,
    dependencyErrors: [pgUnavailable],
  });
  registerAuth(app, deps.auth);
  registerSubscriptionRoutes(app, deps);
  registerPageRoutes(app);
  return app;
}
