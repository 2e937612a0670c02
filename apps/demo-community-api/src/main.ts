/**
 * Composition root of the demo community API (port 3000): the reference producer. Writes and their
 * events commit together through the outbox; an in-process relay publishes them with confirms; a
 * built-in traffic generator (DEMO_TRAFFIC_RATE, off by default; `npm start` asks for 2/s) makes
 * notifications flow on the local demo.
 */
// First: tracing must be set up before the rest is loaded (docs/TRACING.md).
import { tracing } from './tracing';
import { redactConfig } from '@community/config';
import { serviceMain } from '@community/service';
import { DEMO_CONFIG, loadDemoConfig, SERVICE_NAME } from './config';
import { createDemoService } from './service';

// Composition root: configuration, logger, metrics, the service, and the process lifecycle
// (serviceMain, docs/SERVICE-TEMPLATE.md). Called unconditionally: with esbuild's bundle: false,
// `require.main === module` is false.
void serviceMain({
  name: SERVICE_NAME,
  tracing,
  load: () => loadDemoConfig(),
  redact: (config) => redactConfig(DEMO_CONFIG, config),
  create: createDemoService,
});
