import pino from 'pino';
import { REDACT_PATHS, REDACTED, redactString } from './redact';
import { traceLogMixin } from './trace-log';

export type Logger = pino.Logger;
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface LoggerOptions {
  service: string;
  level?: LogLevel;
  /** Where lines go; synchronous stdout by default. Tests pass a stream to read the output. */
  destination?: pino.DestinationStream;
  /** Extra pino redact paths on top of REDACT_PATHS. */
  redactPaths?: readonly string[];
}

/**
 * JSON logs with `service` on every line, ISO time and level names (readable in `kubectl logs`).
 *
 * Two layers of redaction: pino `redact` removes values under known secret keys, and a
 * `streamWrite` hook masks emails, bearer tokens, JWTs and URL passwords anywhere in the finished
 * line. Doing it on the serialized line (rather than walking each log object) covers the message,
 * interpolated arguments, child bindings, nested objects and error messages/stacks with one regex
 * pass per line, and a child logger cannot bypass it because hooks are inherited.
 */
export function createLogger(options: LoggerOptions): Logger {
  const pinoOptions: pino.LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: [...REDACT_PATHS, ...(options.redactPaths ?? [])], censor: REDACTED },
    hooks: { streamWrite: redactString },
  };
  // traceId/spanId on lines written inside a span, when tracing is on (started before the logger).
  const mixin = traceLogMixin();
  if (mixin) pinoOptions.mixin = mixin;
  // Synchronous stdout by default: pino's async default can reorder the last lines when the
  // process exits mid-write and loses them on a crash, exactly the shutdown/fatal lines that matter.
  return pino(pinoOptions, options.destination ?? pino.destination({ dest: 1, sync: true }));
}
