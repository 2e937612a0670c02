// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { createLogger, createRegistry, runService } from '@community/observability';
import { FEED_CONFIG, loadFeedConfig, SERVICE_NAME } from './config';
import { createFeedService } from './service';

/** Composition root: configuration, logger, metrics, the service, and the process lifecycle. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadFeedConfig();
  } catch (err) {
    // Fail fast, naming the variables (ConfigError's message lists every problem).
    process.stderr.write(`${SERVICE_NAME}: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const logger = createLogger({ service: SERVICE_NAME, level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(FEED_CONFIG, config) }, 'configuration');
  logger.info({ enabled: tracing.enabled, reason: tracing.reason }, 'tracing');
  const registry = createRegistry({ service: SERVICE_NAME });
  const service = createFeedService(config, { logger, registry });

  await runService({
    name: SERVICE_NAME,
    logger,
    app: service.app,
    port: config.PORT,
    readiness: service.readiness,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    start: () => service.start(),
    stop: async () => {
      await service.stop();
      await tracing.shutdown(); // flushes the spans still buffered
    },
  });
}

// Called unconditionally: with esbuild's bundle: false, `require.main === module` is false.
void main();
