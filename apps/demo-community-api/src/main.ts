/**
 * Composition root of the demo community API (port 3000): the reference producer. Writes and their
 * events commit together through the outbox; an in-process relay publishes them with confirms; a
 * built-in traffic generator (DEMO_TRAFFIC_RATE, default 2/s) makes notifications flow on `npm start`.
 */
// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { createLogger, createRegistry, runService } from '@community/observability';
import { DEMO_CONFIG, loadDemoConfig, SERVICE_NAME } from './config';
import { createDemoService } from './service';

async function main(): Promise<void> {
  let config;
  try {
    config = loadDemoConfig();
  } catch (err) {
    // Fail fast, naming the variables (ConfigError's message lists every problem).
    process.stderr.write(`${SERVICE_NAME}: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const logger = createLogger({ service: SERVICE_NAME, level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(DEMO_CONFIG, config) }, 'configuration');
  logger.info({ enabled: tracing.enabled, reason: tracing.reason }, 'tracing');
  const registry = createRegistry({ service: SERVICE_NAME });
  const service = createDemoService(config, { logger, registry });

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
