import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
} from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Whether an SDK registered a propagator: the no-op API (tracing off) has none. */
export const tracingEnabled = (): boolean => propagation.fields().length > 0;

/**
 * A SERVER span per HTTP request (docs/TRACING.md), child of the caller's `traceparent` if any,
 * active for the whole request: hooks, body parsing and the route handler, so a handler's outbox
 * rows store this span's context.
 *
 * A hook rather than @opentelemetry/instrumentation-http: that one patches node's `http` module
 * through require hooks, so it works only if loaded before `http` (and not under jest's module
 * registry, where the integration tests run the apps); this hook needs neither. Registered by
 * buildServer only when tracing is on.
 */
export function registerHttpTracing(app: FastifyInstance): void {
  const tracer = trace.getTracer('@community/observability');
  const spans = new WeakMap<FastifyRequest, Span>();

  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(
      request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0],
          'url.scheme': request.protocol,
          'client.address': request.ip,
          ...(request.headers['user-agent'] ? { 'user_agent.original': request.headers['user-agent'] } : {}),
        },
      },
      parent,
    );
    spans.set(request, span);
    const active = trace.setSpan(parent, span);
    // The rest of the request (body parsing included, even when the body comes in later packets of
    // a kept-alive socket) continues from here, so the handler runs inside the span: checked over
    // real sockets in http-tracing.spec.ts. No emitter binding is needed for it.
    otelContext.with(active, done);
  });

  const end = (request: FastifyRequest, statusCode: number | undefined) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    const route = request.routeOptions.url;
    if (route) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    if (statusCode !== undefined) {
      span.setAttribute('http.response.status_code', statusCode);
      if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'request aborted' });
    }
    span.end();
  };
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(request, undefined);
    done();
  });
}
