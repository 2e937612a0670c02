// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { FEED_CONFIG, loadFeedConfig, SERVICE_NAME } from './config';
import { createFeedService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadFeedConfig(),
  redact: (config) => redactConfig(FEED_CONFIG, config),
  create: createFeedService,
});
