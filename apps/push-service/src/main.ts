// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { loadPushConfig, PUSH_CONFIG_SPEC, SERVICE_NAME } from './config';
import { createPushService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadPushConfig(),
  redact: (config) => redactConfig(PUSH_CONFIG_SPEC, config),
  create: createPushService,
  // Past the consumers' drain deadline, leave time for the sends in flight and the pool.
  shutdownTimeoutMs: (config) => config.SHUTDOWN_TIMEOUT_MS + 5_000,
});
