import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { Client } from 'pg';
import { createTestDatabase, createTestVhost, eventually, type TestDatabase, type TestVhost } from '@community/testing';
import { freePort, http, startApp, stopApp, type App } from './harness';

/**
 * Tracing as `npm start` runs it: the demo API as its own process, configured only by the standard
 * variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTLP over HTTP/JSON here so the test can read it), exports
 * its spans to a collector, here a small HTTP server standing in for one. The request's SERVER span
 * and the relay's PRODUCER span of the event it wrote share one trace, and the outbox row stored it.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
}
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}

let vhost: TestVhost;
let db: TestDatabase;
let collector: Server;
let api: App;
const received: Array<{ path: string; contentType: string | undefined; body: OtlpExport }> = [];

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('otlp'), createTestDatabase('otlp')]);
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  collector.listen(0, '127.0.0.1');
  await once(collector, 'listening');
  const { port } = collector.address() as { port: number };
  api = await startApp('demo-community-api', await freePort(), {
    AMQP_URL: vhost.url,
    DATABASE_URL: db.url,
    DEMO_TRAFFIC_RATE: '0',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
}, 60_000);

afterAll(async () => {
  if (api) await stopApp(api);
  collector?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
});

const spansOf = (service: string): OtlpSpan[] =>
  received.flatMap((r) =>
    r.body.resourceSpans
      .filter((rs) => rs.resource.attributes.some((a) => a.key === 'service.name' && a.value.stringValue === service))
      .flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)),
  );

it('exports the request span and the relay publish span of its event over OTLP, in one trace', async () => {
  const res = await http('POST', `${api.url}/v1/users`, { id: 'ada', email: 'ada@example.test', displayName: 'Ada' });
  expect(res.status).toBe(201);

  let request: OtlpSpan | undefined;
  let publish: OtlpSpan | undefined;
  await eventually(
    'both spans exported',
    () => {
      const spans = spansOf('demo-community-api');
      request = spans.find((s) => s.name === 'POST /v1/users');
      publish = spans.find((s) => s.name === 'publish user.upserted');
      return request !== undefined && publish !== undefined;
    },
    20_000,
  );
  expect(received.every((r) => r.path === '/v1/traces' && r.contentType === 'application/json')).toBe(true);
  expect(request?.kind).toBe(2); // SPAN_KIND_SERVER
  expect(publish?.kind).toBe(4); // SPAN_KIND_PRODUCER
  expect(publish?.traceId).toBe(request?.traceId);
  expect(publish?.parentSpanId).toBe(request?.spanId);

  // The outbox row kept the request's context, which is how the relay found it.
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ trace_context: { traceparent: string } }>(
      `SELECT trace_context FROM outbox_messages WHERE event_type = 'user.upserted'`,
    );
    expect(rows.map((r) => r.trace_context.traceparent)).toEqual([`00-${request?.traceId}-${request?.spanId}-01`]);
  } finally {
    await client.end();
  }
});
