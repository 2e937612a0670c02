import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import type { Pool } from 'pg';
import { Registry } from 'prom-client';
import { classifyPgError, createPgPool, withTransaction } from '@community/db';
import { createMessaging, type Messaging } from '@community/messaging';
import { startTracing, type Tracing } from '@community/observability/tracing';
import {
  createTestDatabase,
  createTestVhost,
  eventually,
  testLogger,
  type TestDatabase,
  type TestVhost,
} from '@community/testing';
import { createRelay, enqueueEvents, type OutboxRelay } from '../src';
import { mention, PRODUCER, QUEUE, topology } from './helpers';

/**
 * The outbox hop of a trace (docs/TRACING.md), on a real database and broker: the row stores the
 * writer's trace context, and the relay's message carries its publish span's context. First with
 * tracing off (the default): nothing stored, no header.
 */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const WRITER_SPAN = '00f067aa0ba902b7';
const exporter = new InMemorySpanExporter();
let vhost: TestVhost;
let db: TestDatabase;
let pool: Pool;
let messaging: Messaging;
let relay: OutboxRelay;
let tracing: Tracing | undefined;

beforeAll(async () => {
  [vhost, db] = await Promise.all([createTestVhost('outbox-trace'), createTestDatabase('outbox_trace')]);
  pool = createPgPool(db.url, { max: 4 });
  messaging = createMessaging({
    url: vhost.url,
    service: 'outbox-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [classifyPgError],
  });
  await messaging.start();
  relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger: testLogger(),
    registry: new Registry(),
    databaseUrl: db.url,
    pollIntervalMs: 200,
  });
  await relay.start();
});

afterAll(async () => {
  await relay.stop();
  await messaging.stop(1000);
  await pool.end();
  await Promise.all([vhost.delete(), db.drop()]);
  await tracing?.shutdown();
  trace.disable();
  propagation.disable();
  context.disable();
});

/** Enqueues one mention inside the writer's span (a remote parent standing for the HTTP request's). */
async function enqueueInSpan(aggregateId: string) {
  const writer = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: WRITER_SPAN,
    traceFlags: 1,
    isRemote: true,
  });
  const event = mention(aggregateId, 1);
  await context.with(writer, () =>
    withTransaction(pool, (tx) => enqueueEvents(tx, PRODUCER, [{ event, aggregateId }])),
  );
  return event;
}

async function published(eventId: string) {
  let found: Awaited<ReturnType<TestVhost['take']>>[number] | undefined;
  await eventually(`${eventId} in ${QUEUE}`, async () => {
    found = (await vhost.take(QUEUE, 100)).find((m) => m.properties.message_id === eventId);
    return found !== undefined;
  });
  const { rows } = await pool.query<{ trace_context: Record<string, string> | null }>(
    'SELECT trace_context FROM outbox_messages WHERE event_id = $1',
    [eventId],
  );
  return { message: found, stored: rows[0].trace_context };
}

it('tracing off: the row stores no context and the message has no traceparent, even inside a span', async () => {
  const event = await enqueueInSpan('ada');
  const { message, stored } = await published(event.id);
  expect(stored).toBeNull();
  expect(message?.properties.headers).not.toHaveProperty('traceparent');
  expect(message?.properties.headers?.['x-schema-version']).toBe(1);
});

it("tracing on: the row stores the writer's context; the message carries the publish span, its child", async () => {
  tracing = startTracing('outbox-test', { spanProcessors: [new SimpleSpanProcessor({ exporter })] });

  const event = await enqueueInSpan('bob');
  const { message, stored } = await published(event.id);
  expect(stored).toEqual({ traceparent: `00-${TRACE_ID}-${WRITER_SPAN}-01` });
  await eventually('the publish span ended', () => exporter.getFinishedSpans().length === 1);
  const [span] = exporter.getFinishedSpans();
  expect(span.name).toBe('publish user.mentioned');
  expect(span.parentSpanContext?.spanId).toBe(WRITER_SPAN);
  expect(message?.properties.headers?.traceparent).toBe(`00-${TRACE_ID}-${span.spanContext().spanId}-01`);
});
