import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { pgUnavailable, type ScheduledJob, type Scheduler } from '@community/db';
import type { ManagementTarget, Publisher } from '@community/messaging';
import { buildServer, type AuthSettings, type ReadinessProbe } from '@community/observability';
import type { ReconcilerConfig } from './config';
import { registerAdminRoutes } from './http/admin-routes';
import { registerAuth } from './http/auth';
import { registerErasureRoutes } from './http/erasure-routes';
import { registerLostWorkRoutes } from './http/lost-work-routes';
import { registerWhyRoute } from './http/why-route';
import type { FeedChecker } from './jobs/feeds';
import type { Watchdog } from './jobs/watchdog';
import type { ReconcilerMetrics } from './metrics';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  metrics: ReconcilerMetrics;
  config: ReconcilerConfig;
  /** Who may call (JWT_SECRET, ADMIN_KEYS, …): `authSettingsFrom(SERVICE_NAME, config)`. */
  auth: AuthSettings;
  scheduler: Scheduler;
  jobs: readonly ScheduledJob[];
  watchdog: Watchdog;
  management: ManagementTarget;
  workQueues: readonly string[];
  startedAt: Date;
  clock: () => Date;
  /** Undefined without messaging: a full recount then runs in this request instead of the queue. */
  publisher?: Publisher;
  /** The DLQ console's routes (/console, /v1/admin/dlq/*), when it runs. */
  dlqRoutes?: FastifyPluginAsync;
  feeds: FeedChecker;
  readiness: ReadinessProbe;
}

/** The admin API (docs/RECONCILER.md "HTTP API"), built without listening: tests use inject(). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({ logger: deps.logger, registry: deps.registry, readiness: deps.readiness, dependencyErrors: [pgUnavailable] });
  registerAuth(app, deps.auth);
  registerAdminRoutes(app, deps);
  registerWhyRoute(app, deps);
  registerErasureRoutes(app, deps);
  registerLostWorkRoutes(app, deps);
  if (deps.dlqRoutes) app.register(deps.dlqRoutes);
  return app;
}
