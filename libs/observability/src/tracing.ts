import type { NodeSDK } from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';

/**
 * OpenTelemetry tracing for one service process (docs/TRACING.md). Off by default, and then free:
 * no SDK is loaded or started, the code paths that trace ask @opentelemetry/api, whose no-op
 * implementation has no propagator, and skip their work (no span, no AMQP header, no stored
 * context).
 *
 * On when configured with the standard OpenTelemetry variables (an optional extension of the
 * contract's configuration, docs/CONTRACT.md):
 * - `OTEL_TRACES_EXPORTER` = `otlp` and/or `console` (`none` = off);
 * - or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set (OTLP implied);
 * - `OTEL_SDK_DISABLED=true` wins: off.
 * The SDK reads the rest itself (`OTEL_EXPORTER_OTLP_PROTOCOL`, headers, `OTEL_TRACES_SAMPLER`,
 * `OTEL_PROPAGATORS`, `OTEL_RESOURCE_ATTRIBUTES`, ...). Only traces: metrics stay on /metrics
 * (Prometheus), logs on stdout.
 *
 * Call it first in main.ts (apps/<app>/src/tracing.ts is main.ts's first import), so the global
 * providers exist before any module asks for a tracer.
 */

export interface TracingSettings {
  enabled: boolean;
  /** Why: which variable turned it on, or why it is off. */
  reason: string;
}

const EXPORTERS = new Set(['otlp', 'console', 'none']);
const PROTOCOLS = new Set(['grpc', 'http/protobuf', 'http/json']);

type Env = Record<string, string | undefined>;

const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** Reads (and checks) the variables. Throws an Error naming the variable when one is invalid. */
export function tracingSettings(env: Env = process.env): TracingSettings {
  const problems: string[] = [];
  const exporters = set(env.OTEL_TRACES_EXPORTER)
    ? env.OTEL_TRACES_EXPORTER.split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean)
    : [];
  for (const e of exporters)
    if (!EXPORTERS.has(e))
      problems.push(`OTEL_TRACES_EXPORTER: unknown exporter '${e}' (expected otlp, console or none)`);
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
    const v = env[name];
    if (!set(v)) continue;
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(v).protocol);
    } catch {
      ok = false;
    }
    if (!ok) problems.push(`${name}: '${v}' is not an http(s) URL`);
  }
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
    const v = env[name];
    if (set(v) && !PROTOCOLS.has(v.trim()))
      problems.push(`${name}: unknown protocol '${v}' (expected grpc, http/protobuf or http/json)`);
  }
  if (problems.length > 0)
    throw new Error(`Invalid tracing configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);

  if (/^true$/i.test(env.OTEL_SDK_DISABLED?.trim() ?? '')) return { enabled: false, reason: 'OTEL_SDK_DISABLED=true' };
  if (exporters.length > 0) {
    const real = exporters.filter((e) => e !== 'none');
    return real.length > 0
      ? { enabled: true, reason: `OTEL_TRACES_EXPORTER=${real.join(',')}` }
      : { enabled: false, reason: 'OTEL_TRACES_EXPORTER=none' };
  }
  if (set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT))
    return { enabled: true, reason: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set' };
  if (set(env.OTEL_EXPORTER_OTLP_ENDPOINT)) return { enabled: true, reason: 'OTEL_EXPORTER_OTLP_ENDPOINT is set' };
  return { enabled: false, reason: 'not configured (set OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT)' };
}

export interface Tracing extends TracingSettings {
  /** Flushes and stops the exporter (end of the process); nothing to do when off. */
  shutdown(): Promise<void>;
}

export interface StartTracingOptions {
  env?: Env;
  /**
   * Tests: span processors of their own (e.g. an InMemorySpanExporter behind a SimpleSpanProcessor).
   * Given, tracing is on whatever the variables say, and no exporter is read from them.
   */
  spanProcessors?: SpanProcessor[];
}

let running: { sdk: NodeSDK; tracing: Tracing } | undefined;

/**
 * Starts the OpenTelemetry SDK for `serviceName` when configured (see tracingSettings), once per
 * process: a second call returns the running one. Throws on an invalid variable (fail fast).
 */
export function startTracing(serviceName: string, options: StartTracingOptions = {}): Tracing {
  if (running) return running.tracing;
  const settings = options.spanProcessors
    ? { enabled: true, reason: 'span processors given' }
    : tracingSettings(options.env);
  if (!settings.enabled) return { ...settings, shutdown: async () => undefined };
  // Loaded only when on: the SDK and its exporters are megabytes of modules a process with tracing
  // off never needs.
  const { NodeSDK: Sdk } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const sdk = new Sdk({
    // OTEL_SERVICE_NAME, if set, wins (the SDK would let this option override it).
    serviceName: (options.env ?? process.env).OTEL_SERVICE_NAME?.trim() || serviceName,
    // No module patching: context crosses HTTP, the outbox and AMQP explicitly (docs/TRACING.md).
    instrumentations: [],
    // Traces only: the SDK would otherwise default metrics and logs to OTLP exporters too.
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  const tracing: Tracing = {
    ...settings,
    async shutdown() {
      if (running?.sdk !== sdk) return;
      running = undefined;
      await sdk.shutdown();
    },
  };
  running = { sdk, tracing };
  return tracing;
}
