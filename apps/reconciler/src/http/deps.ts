// What the admin API's routes are given. Its own module, not app.ts: app.ts imports every route file,
// so a route importing this type from app.ts would close an import cycle (scripts/dev/no-cycles.spec.ts).
import type { FastifyPluginAsync } from 'fastify';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ScheduledJob, Scheduler } from '@community/db';
import type { ManagementTarget, Publisher } from '@community/messaging';
import type { AuthSettings, ReadinessProbe } from '@community/service';
import type { ReconcilerConfig } from '../config';
import type { FeedChecker } from '../jobs/feeds';
import type { Watchdog } from '../jobs/watchdog';
import type { ReconcilerMetrics } from '../metrics';

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
