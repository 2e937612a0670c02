import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { createLogger, type Logger, type LogLevel } from '@community/observability';
import { createRegistry } from '@community/observability';
import type { ReadinessState } from './readiness';
import { runService } from './run-service';
import type { Tracing } from '@community/observability';

/** The config fields every service's main needs (libs/config's commonConfig provides them). */
interface CommonConfig {
  LOG_LEVEL: string;
  HOST: string;
  PORT: number;
  SHUTDOWN_TIMEOUT_MS: number;
}

export interface ServiceMainOptions<C extends CommonConfig> {
  name: string;
  /** The app's `tracing.ts` export, imported first by main.ts (docs/TRACING.md). */
  tracing: Tracing;
  /** Loads the config; a ConfigError names the variables and stops the process with exit 1. */
  load: () => C;
  /** The config as it may be logged (libs/config's redactConfig with the app's spec). */
  redact: (config: C) => Record<string, unknown>;
  create: (
    config: C,
    deps: { logger: Logger; registry: Registry },
  ) => {
    app: FastifyInstance;
    readiness: ReadinessState;
    start(): Promise<void>;
    stop(): Promise<void>;
  };
  /** runService's deadline; the config's SHUTDOWN_TIMEOUT_MS by default. */
  shutdownTimeoutMs?: (config: C) => number;
}

/**
 * Every app's main.ts (docs/SERVICE-TEMPLATE.md): config (fail fast) → logger → registry → the
 * service's builder → runService, with tracing flushed after the service stops.
 */
export async function serviceMain<C extends CommonConfig>(options: ServiceMainOptions<C>): Promise<void> {
  const { name, tracing } = options;
  let config: C;
  try {
    config = options.load();
  } catch (err) {
    // Fail fast, naming the variables (ConfigError's message lists every problem).
    process.stderr.write(`${name}: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const logger = createLogger({ service: name, level: config.LOG_LEVEL as LogLevel });
  logger.info({ config: options.redact(config) }, 'configuration');
  logger.info({ enabled: tracing.enabled, reason: tracing.reason }, 'tracing');
  const registry = createRegistry({ service: name });
  const service = options.create(config, { logger, registry });

  await runService({
    name,
    logger,
    app: service.app,
    port: config.PORT,
    host: config.HOST,
    readiness: service.readiness,
    shutdownTimeoutMs: options.shutdownTimeoutMs?.(config) ?? config.SHUTDOWN_TIMEOUT_MS,
    start: () => service.start(),
    stop: async () => {
      await service.stop();
      await tracing.shutdown(); // flushes the spans still buffered
    },
  });
}
