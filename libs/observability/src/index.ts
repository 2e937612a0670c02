// What every process records about itself: logs, metrics and traces. (The HTTP server, auth, the
// error catalogue and the process lifecycle are @community/service's.)
export { createLogger } from './logger';
export { redactString } from './redact';
export type { Logger, LoggerOptions, LogLevel } from './logger';
export { createRegistry } from './metrics';
export type { RegistryOptions } from './metrics';
export { startTracing, tracingSettings } from './tracing';
export type { StartTracingOptions, Tracing, TracingSettings } from './tracing';
// For @community/service's HTTP server: a span per request, when tracing is on.
export { registerHttpTracing, tracingEnabled } from './http-tracing';
