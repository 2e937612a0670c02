import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { buildServer, type AuthSettings, type ReadinessProbe } from '@community/service';
import { registerAuth } from './http/auth';
import { registerFeedRoutes } from './http/feed-routes';
import type { FeedReader } from './read/feed-reader';
import { pgUnavailable } from '@community/db';

export interface AppDeps {
  logger: Logger;
  registry: Registry;
  reader: FeedReader;
  /** Who may call (JWT_SECRET, ADMIN_KEYS, …): `authSettingsFrom(SERVICE_NAME, config)`. */
  auth: AuthSettings;
  readiness: ReadinessProbe;
  readinessDetails: () => Record<string, unknown>;
}

/** The HTTP API (docs/CONTRACT.md "HTTP contract"), built without listening: tests use inject(). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.readiness,
    readinessDetails: deps.readinessDetails,
    dependencyErrors: [pgUnavailable],
  });
  registerAuth(app, deps.auth);
  registerFeedRoutes(app, deps);
  return app;
}
