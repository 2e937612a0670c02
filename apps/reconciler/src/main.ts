// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { loadReconcilerConfig, RECONCILER_CONFIG, SERVICE_NAME } from './config';
import { createReconcilerService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadReconcilerConfig(),
  redact: (config) => redactConfig(RECONCILER_CONFIG, config),
  create: createReconcilerService,
});
