import { Registry } from 'prom-client';
import {
  createMessaging,
  PermanentError,
  TransientError,
  type ErrorClassifier,
  type Messaging,
  type Middleware,
} from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent, type TestEvent } from './support/events';

/** What an app adds to the runtime without editing it: its own middleware and error classifiers. */
const topology = testTopology([
  // Two services' queues bound to the same routing key.
  { name: 'test.own', routingKeys: ['test.shared'] },
  { name: 'test.other', routingKeys: ['test.shared'] },
  { name: 'test.app-middleware' },
  { name: 'test.classified' },
]);

/** An app's error type, and the classifier its owner registers: REFUSED will never succeed. */
const refusedIsPermanent: ErrorClassifier = (err) =>
  (err as { code?: unknown }).code === 'REFUSED' ? 'permanent' : undefined;

let vhost: TestVhost;
let messaging: Messaging;

beforeAll(async () => {
  vhost = await createTestVhost('middleware');
  messaging = createMessaging({
    url: vhost.url,
    service: 'middleware-test',
    topology,
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [refusedIsPermanent],
  });
});

afterAll(async () => {
  await messaging.stop(2000);
  await vhost.delete();
});

it('returns a retry to its own queue only: another queue bound to the same key gets nothing from it', async () => {
  const own: number[] = [];
  const other: string[] = [];
  messaging.consume({
    queue: 'test.own',
    name: 'fails-once',
    validate: validateTestEvent,
    handle: async (e, ctx) => {
      if (e.data.excerpt === 'marker') return 'skipped';
      own.push(ctx.attempt);
      if (ctx.attempt === 1) throw new TransientError('busy once');
      return 'processed';
    },
  });
  messaging.consume({
    queue: 'test.other',
    name: 'records',
    validate: validateTestEvent,
    handle: async (e) => void other.push(e.id),
  });
  await messaging.start();

  const event = mention('shared');
  await messaging.publisher.publish(event, { routingKey: 'test.shared' });
  await eventually('the retry handled by test.own', () => own.includes(2));
  // A stray copy of the retry would have reached test.other no later than test.own (one routing
  // step), so before a marker published now: once the marker is there, anything stray is too.
  const marker = mention('marker');
  await messaging.publisher.publish(marker, { routingKey: 'test.shared' });
  await eventually('the marker reached test.other', () => other.includes(marker.id));
  expect(own).toEqual([1, 2]);
  expect(other).toEqual([event.id, marker.id]); // the original only, never the retry
  // Quorum queues apply settlements through their Raft log: the count settles a moment later.
  await eventually('test.other acked', async () => (await vhost.depth('test.other')).total === 0);
  expect(await vhost.depth('test.other.dlq')).toMatchObject({ total: 0 });
});

it('runs an app’s middleware around its handler, inside the runtime’s: validated event, bound signal, its errors routed', async () => {
  const trace: string[] = [];
  const handled: string[] = [];
  const around: Middleware<TestEvent> = (next) => async (event, ctx) => {
    trace.push(`before ${event.data.excerpt} attempt=${ctx.attempt} aborted=${ctx.signal.aborted}`);
    const outcome = await next(event, ctx);
    trace.push(`after ${event.data.excerpt} ${outcome}`);
    return outcome;
  };
  const refuseBlocked: Middleware<TestEvent> = (next) => async (event, ctx) => {
    if (event.data.userId === 'blocked') throw new PermanentError(`user ${event.data.userId} is blocked`);
    return next(event, ctx);
  };
  messaging.consume({
    queue: 'test.app-middleware',
    name: 'with-middleware',
    validate: validateTestEvent,
    middleware: [around, refuseBlocked],
    handle: async (e) => {
      handled.push(e.id);
      return 'duplicate';
    },
  });

  const fine = mention('fine');
  const blocked = { ...mention('blocked'), data: { excerpt: 'blocked', userId: 'blocked' } };
  await messaging.publisher.publish(fine, { routingKey: 'test.app-middleware' });
  await eventually('fine handled', () => trace.includes('after fine duplicate'));
  await messaging.publisher.publish(blocked, { routingKey: 'test.app-middleware' });
  const [dead] = await eventually('blocked in the DLQ', async () => {
    const got = await vhost.take('test.app-middleware.dlq', 1);
    return got.length ? got : undefined;
  });

  expect(trace).toEqual([
    'before fine attempt=1 aborted=false',
    'after fine duplicate',
    'before blocked attempt=1 aborted=false',
  ]);
  expect(handled).toEqual([fine.id]); // the middleware stopped the blocked one before the handler
  expect(dead.properties.message_id).toBe(blocked.id);
  expect(dead.properties.headers).toMatchObject({
    'x-error-class': 'PermanentError',
    'x-error-message': 'user blocked is blocked',
    'x-error-kind': 'permanent',
  });
});

it('lets a registered classifier dead-letter an error type the runtime does not know, on the first attempt', async () => {
  const attempts: number[] = [];
  messaging.consume({
    queue: 'test.classified',
    name: 'refused',
    validate: validateTestEvent,
    handle: async (_e, ctx) => {
      attempts.push(ctx.attempt);
      throw Object.assign(new Error('the provider refused it'), { code: 'REFUSED' });
    },
  });
  await messaging.publisher.publish(mention('refused'), { routingKey: 'test.classified' });
  const [dead] = await eventually('in the DLQ', async () => {
    const got = await vhost.take('test.classified.dlq', 1);
    return got.length ? got : undefined;
  });
  expect(attempts).toEqual([1]);
  expect(dead.properties.headers).toMatchObject({
    'x-error-kind': 'permanent',
    'x-attempts': 1,
    'x-error-message': 'the provider refused it',
  });
});
