/**
 * main.ts's first import: starts OpenTelemetry tracing when configured (OTEL_TRACES_EXPORTER or
 * OTEL_EXPORTER_OTLP_ENDPOINT; docs/TRACING.md) before anything else is loaded. Off by default.
 * An invalid tracing variable stops the process here, naming it.
 */
import { startTracing, type Tracing } from '@community/observability/tracing';

function start(): Tracing {
  try {
    return startTracing('push-service');
  } catch (err) {
    process.stderr.write(`push-service: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

export const tracing = start();
