import { redactConfig } from '@community/config';
import { createLogger, createRegistry, runService } from '@community/observability';
import { EMAIL_CONFIG_SPEC, loadEmailConfig } from './config';
import { createEmailService } from './service';

/** Composition root: configuration, logger, metrics, the service, and the process lifecycle. */
export async function main(): Promise<void> {
  let config;
  try {
    config = loadEmailConfig();
  } catch (err) {
    // Fail fast, naming the variables (ConfigError's message lists every problem).
    process.stderr.write(`email-service: ${(err as Error).message}\n`);
    process.exit(1);
  }
  const logger = createLogger({ service: 'email-service', level: config.LOG_LEVEL });
  logger.info({ config: redactConfig(EMAIL_CONFIG_SPEC, config) }, 'configuration');
  const registry = createRegistry({ service: 'email-service' });
  const service = createEmailService({ config, logger, registry });

  await runService({
    name: 'email-service',
    logger,
    app: service.app,
    port: config.PORT,
    readiness: service.readiness,
    start: () => service.start(),
    stop: () => service.stop(),
    // Past the consumers' drain deadline, leave time to close the pool and the SMTP connections.
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS + 5_000,
  });
}

// Called unconditionally: with esbuild's bundle: false, `require.main === module` is false (TOOLCHAIN.md).
void main();
