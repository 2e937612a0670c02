import { context, propagation, trace } from '@opentelemetry/api';
import { startTracing, tracingSettings } from './tracing';

describe('tracingSettings', () => {
  it('is off unless configured, and says why', () => {
    expect(tracingSettings({})).toEqual({ enabled: false, reason: expect.stringContaining('not configured') });
    expect(
      tracingSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).enabled,
    ).toBe(false);
    expect(tracingSettings({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }).enabled).toBe(false);
  });

  it('is on with an exporter or an OTLP endpoint', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      enabled: true,
      reason: 'OTEL_TRACES_EXPORTER=otlp',
    });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console,otlp' }).enabled).toBe(true);
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({
      enabled: true,
      reason: 'OTEL_EXPORTER_OTLP_ENDPOINT is set',
    });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/v1/traces' }).enabled).toBe(true);
  });

  it('fails fast, naming each invalid variable', () => {
    expect(() => tracingSettings({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(
      /OTEL_TRACES_EXPORTER: unknown exporter 'jaeger'/,
    );
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' is not an http\(s\) URL/,
    );
    expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'udp' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: unknown protocol 'udp'/,
    );
  });
});

describe('startTracing', () => {
  afterAll(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('off: starts no SDK (no propagator, no recording tracer) and loads none', () => {
    const sdkModule = require.resolve('@opentelemetry/sdk-node');
    const tracing = startTracing('svc', { env: {} });
    expect(tracing.enabled).toBe(false);
    expect(propagation.fields()).toEqual([]);
    expect(trace.getTracer('t').startSpan('s').isRecording()).toBe(false);
    expect(Object.keys(require.cache)).not.toContain(sdkModule);
  });

  it('on (OTEL_TRACES_EXPORTER=console): the SDK registers the W3C propagator and a recording tracer; once per process', async () => {
    const tracing = startTracing('svc', { env: { OTEL_TRACES_EXPORTER: 'console' } });
    expect(tracing).toMatchObject({ enabled: true, reason: 'OTEL_TRACES_EXPORTER=console' });
    expect(propagation.fields()).toEqual(expect.arrayContaining(['traceparent', 'tracestate']));
    expect(trace.getTracer('t').startSpan('s').isRecording()).toBe(true); // never ended: nothing printed
    expect(startTracing('other', { env: {} })).toBe(tracing);
    await tracing.shutdown();
  });
});
