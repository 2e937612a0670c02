import type { FastifyInstance } from 'fastify';
import { pgUnavailable } from '@community/db';
import { buildServer } from '@community/service';
import { registerAdminRoutes } from './http/admin-routes';
import { registerAuth } from './http/auth';
import type { AppDeps } from './http/deps';
import { registerErasureRoutes } from './http/erasure-routes';
import { registerLostWorkRoutes } from './http/lost-work-routes';
import { registerWhyRoute } from './http/why-route';

/** The admin API (docs/RECONCILER.md "HTTP API"), built without listening: tests use inject(). */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = buildServer({
    logger: deps.logger,
    registry: deps.registry,
    readiness: deps.readiness,
    dependencyErrors: [pgUnavailable],
  });
  registerAuth(app, deps.auth);
  registerAdminRoutes(app, deps);
  registerWhyRoute(app, deps);
  registerErasureRoutes(app, deps);
  registerLostWorkRoutes(app, deps);
  if (deps.dlqRoutes) app.register(deps.dlqRoutes);
  return app;
}
