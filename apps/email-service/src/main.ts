// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { EMAIL_CONFIG_SPEC, loadEmailConfig, SERVICE_NAME } from './config';
import { createEmailService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadEmailConfig(),
  redact: (config) => redactConfig(EMAIL_CONFIG_SPEC, config),
  create: createEmailService,
  // Past the consumers' drain deadline, leave time to close the pool and the SMTP connections.
  shutdownTimeoutMs: (config) => config.SHUTDOWN_TIMEOUT_MS + 5_000,
});
