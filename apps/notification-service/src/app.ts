import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { pgUnavailable } from '@community/db';
import { buildServer, type AuthSettings, type ReadinessProbe } from '@community/service';
import { inboxGuards, registerAuth } from './http/auth';
import { registerNotificationRoutes } from './http/notification-routes';
import { registerPreferenceRoutes } from './http/preference-routes';
import { registerReadStateRoute } from './http/read-state-route';
import { registerStreamRoute } from './http/stream-route';
import type { NotificationMetrics } from './metrics';
import type { InboxHub } from './sse/hub';

export interface AppDeps {
  pool: Pool;
  logger: Logger;
  registry: Registry;
  metrics: NotificationMetrics;
  hub: InboxHub;
  /** Who may call (JWT_SECRET, ADMIN_KEYS, …): `authSettingsFrom(SERVICE_NAME, config)`. */
  auth: AuthSettings;
  /** email-service's public key: its opt-out and read-state service tokens (EMAIL_SERVICE_VERIFY_KEY). */
  emailServiceVerifyKey: string;
  /** push-service's public key: its read-state service tokens (PUSH_SERVICE_VERIFY_KEY). */
  pushServiceVerifyKey: string;
  readiness: ReadinessProbe;
  /** Shown in /readyz without deciding it (e.g. the broker blocking publishes: a broker-wide alarm). */
  readinessDetails?: () => Record<string, unknown>;
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
  const guards = inboxGuards({ emailService: deps.emailServiceVerifyKey, pushService: deps.pushServiceVerifyKey });
  registerNotificationRoutes(app, { ...deps, guards });
  registerPreferenceRoutes(app, { ...deps, guards });
  registerStreamRoute(app, { ...deps, guards });
  registerReadStateRoute(app, { ...deps, guards });
  // preClose runs before the server stops accepting and waits for open connections: SSE streams
  // never end on their own, so end them here (clients reconnect to another replica and resume).
  app.addHook('preClose', async () => deps.hub.closeStreams());
  return app;
}
