// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { loadNotificationConfig, NOTIFICATION_CONFIG, SERVICE_NAME } from './config';
import { createNotificationService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadNotificationConfig(),
  redact: (config) => redactConfig(NOTIFICATION_CONFIG, config),
  create: createNotificationService,
});
