import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { Registry } from 'prom-client';
import { createDemoService, loadDemoConfig, type DemoService } from '../apps/demo-community-api/src';
import { createEmailService, loadEmailConfig } from '../apps/email-service/src';
import {
  createNotificationService,
  loadNotificationConfig,
  type NotificationService,
} from '../apps/notification-service/src';
import { startTracing, type Tracing } from '@community/observability/tracing';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { startSmtpSink } from './harness';

/**
 * Tracing across the outbox (docs/TRACING.md): one trace from an HTTP request of the demo API,
 * through its outbox row and the relay's publish, to notification-service's consumer, that
 * consumer's notification.created (its own outbox and relay), and email-service's consumer.
 * The three apps run in this process, built by their own builders, so the span processor this
 * test registers sees every span. Real broker, database and SMTP server.
 */
const SECRET = 'tracing-secret-tracing-secret-0123456789';
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let vhost: TestVhost;
let db: TestDatabase;
let smtp: Awaited<ReturnType<typeof startSmtpSink>>;
let api: DemoService;
let notifications: NotificationService;
let email: ReturnType<typeof createEmailService>;
let apiUrl: string;

beforeAll(async () => {
  // Before any service is built: servers and consumers decide at build time whether to trace.
  tracing = startTracing('tracing-test', { spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  [vhost, db, smtp] = await Promise.all([createTestVhost('tracing'), createTestDatabase('tracing'), startSmtpSink()]);
  const common = { AMQP_URL: vhost.url, DATABASE_URL: db.url, JWT_SECRET: SECRET, PORT: '0', LOG_LEVEL: 'silent' };
  notifications = createNotificationService(loadNotificationConfig({ ...common, CONSUMER_BATCH_WAIT_MS: '5' }), {
    logger: testLogger('tracing-ns'),
    registry: new Registry(),
    relayPollIntervalMs: 200,
  });
  email = createEmailService(
    loadEmailConfig({
      ...common,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      SMTP_RATE_PER_SECOND: '0',
      USER_ADDRESS_GRACE_MS: '0',
    }),
    {
      logger: testLogger('tracing-email'),
      registry: new Registry(),
      runTicker: false,
    },
  );
  api = createDemoService(loadDemoConfig({ ...common, DEMO_TRAFFIC_RATE: '0' }), {
    logger: testLogger('tracing-api'),
    registry: new Registry(),
  });
  // notification-service first: its queues must exist before the first event is published.
  await notifications.start();
  await Promise.all([email.start(), api.start()]);
  apiUrl = await api.app.listen({ port: 0, host: '127.0.0.1' });
}, 90_000);

afterAll(async () => {
  await api?.stop();
  await api?.app.close();
  await notifications?.stop();
  await notifications?.app.close();
  await email?.stop();
  await email?.app.close();
  await smtp?.close();
  await Promise.all([vhost?.delete(), db?.drop()]);
  await tracing?.shutdown();
});

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { id?: string } }> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { id?: string } };
}

/** The span's ancestors, nearest first, among the finished spans. */
function ancestors(span: ReadableSpan, all: ReadableSpan[]): ReadableSpan[] {
  const byId = new Map(all.map((s) => [s.spanContext().spanId, s]));
  const chain: ReadableSpan[] = [];
  let parentId = span.parentSpanContext?.spanId;
  while (parentId) {
    const parent = byId.get(parentId);
    if (!parent) break;
    chain.push(parent);
    parentId = parent.parentSpanContext?.spanId;
  }
  return chain;
}

it('a mention is one trace: HTTP request → outbox → relay → notification-service → its outbox → email-service', async () => {
  for (const id of ['ada', 'bob']) {
    expect((await post('/v1/users', { id, email: `${id}@example.test`, displayName: id.toUpperCase() })).status).toBe(
      201,
    );
  }
  // Bob comments on his own post (a self-action notifies nobody), so the mention is ada's only notification.
  const created = await post('/v1/posts', { title: 'Tracing', body: 'Where did my event go?' }, { 'x-user-id': 'bob' });
  expect(created.status).toBe(201);
  // Ada's address must be in email-service's projection before the mention's email is due.
  await eventually(
    'ada known to email-service',
    async () => (await email.pool.query(`SELECT 1 FROM email_users WHERE user_id = 'ada'`)).rowCount === 1,
  );

  // The caller's own trace: the request span continues it (W3C traceparent in).
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpanId = '00f067aa0ba902b7';
  const comment = await post(
    `/v1/posts/${created.body.id}/comments`,
    { body: 'ask @ada' },
    { 'x-user-id': 'bob', traceparent: `00-${traceId}-${callerSpanId}-01` },
  );
  expect(comment.status).toBe(201);
  await eventually('the mention email', () => smtp.mails.some((m) => m.to.includes('ada@example.test')), 30_000);

  let spans: ReadableSpan[] = [];
  let emailConsumers: ReadableSpan[] = [];
  await eventually(
    'the email-service consumer span that sent it ended',
    () => {
      spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      emailConsumers = spans.filter(
        (s) =>
          s.kind === SpanKind.CONSUMER &&
          String(s.attributes['messaging.consumer.group.name']).startsWith('email-service.') &&
          s.attributes['messaging.rabbitmq.destination.routing_key'] === 'notification.created',
      );
      return emailConsumers.some((s) => s.attributes['messaging.outcome'] === 'processed');
    },
    15_000,
  );

  const request = spans.find((s) => s.kind === SpanKind.SERVER && s.name === 'POST /v1/posts/:postId/comments');
  expect(request?.parentSpanContext?.spanId).toBe(callerSpanId);
  expect(request?.attributes['http.response.status_code']).toBe(201);

  // Every email-service consumer of it (the immediate lane sent it; another lane may have skipped
  // it) descends from the request, through every hop, in order.
  for (const consumer of emailConsumers) {
    const chain = ancestors(consumer, spans);
    expect(chain.map((s) => `${SpanKind[s.kind]} ${s.name}`)).toEqual([
      'PRODUCER publish notification.created',
      expect.stringMatching(/^CONSUMER process notification-service\./),
      'PRODUCER publish user.mentioned',
      'SERVER POST /v1/posts/:postId/comments',
    ]);
    expect(chain[3]).toBe(request);
    expect(chain[0].attributes['outbox.producer']).toBe('notification-service');
    expect(chain[1].attributes['messaging.rabbitmq.destination.routing_key']).toBe('user.mentioned');
    expect(chain[2].attributes['outbox.producer']).toBe('community-api');
  }

  // The users created before are other traces (one per request), not mixed into this one.
  const otherRequests = exporter
    .getFinishedSpans()
    .filter((s) => s.kind === SpanKind.SERVER && s.name === 'POST /v1/users');
  expect(otherRequests).toHaveLength(2);
  for (const r of otherRequests) expect(r.spanContext().traceId).not.toBe(traceId);
  expect(trace.getActiveSpan()).toBeUndefined();
});
