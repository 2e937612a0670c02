import { setTimeout as sleep } from 'node:timers/promises';
import { connect as amqpConnect } from 'amqplib';
import { Registry } from 'prom-client';
import { createMessaging, HandlerTimeoutError, PermanentError, TopologyDriftError, TransientError, UnroutableError, type MessageContext, type Messaging } from '../src';
import { createTestVhost, eventually, type PeekedMessage, type TestVhost } from './support/broker';
import { mention, testLogger, testTopology, validateTestEvent, type TestEvent } from './support/events';

const topology = testTopology([
  { name: 'test.idle' },
  { name: 'test.transient' },
  { name: 'test.permanent' },
  { name: 'test.malformed' },
  { name: 'test.timeout' },
  { name: 'test.concurrency' },
]);

let vhost: TestVhost;
let messaging: Messaging;
const started: Messaging[] = [];

function newMessaging(t = topology): Messaging {
  const m = createMessaging({ url: vhost.url, service: 'runtime-test', topology: t, logger: testLogger(), registry: new Registry(), classifiers: [] });
  started.push(m);
  return m;
}

beforeAll(async () => {
  vhost = await createTestVhost('runtime');
  messaging = newMessaging();
});

afterAll(async () => {
  await Promise.all(started.map((m) => m.stop(2000)));
  await vhost.delete();
});

describe('topology setup', () => {
  it('declaring the same topology twice is a no-op: the broker holds exactly the planned queues, with their policies', async () => {
    await messaging.start();
    const second = newMessaging();
    await second.start(); // same declarations again: no PRECONDITION_FAILED
    const queues = await vhost.queues();
    expect(queues.map((q) => q.name).sort()).toEqual(messaging.plan.queues.map((q) => q.name).sort());
    expect(queues.every((q) => q.type === 'quorum')).toBe(true);
    const policies = (await (
      await fetch(`${vhost.management.baseUrl}/api/policies/${encodeURIComponent(vhost.vhost)}`, {
        headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
      })
    ).json()) as Array<{ name: string; definition: Record<string, unknown> }>;
    expect(policies.find((p) => p.name === 'messaging:test.transient')?.definition).toMatchObject({
      'delivery-limit': 3,
      'dead-letter-exchange': 'dlx',
      overflow: 'drop-head',
    });
  });

  it('refuses to start when a queue exists with drifted arguments, naming the queue and the argument', async () => {
    // test.idle exists (declared above) without single-active-consumer; this runtime wants it with.
    const drifted = newMessaging(testTopology([{ name: 'test.idle', singleActiveConsumer: true }]));
    const failure = await drifted.start().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(TopologyDriftError);
    expect(failure).toMatchObject({ kind: 'queue', entity: 'test.idle' });
    expect((failure as Error).message).toMatch(/queue "test\.idle" exists on the broker with other arguments/);
    expect((failure as Error).message).toContain('x-single-active-consumer');
    // The broker kept the original queue as it was.
    expect((await vhost.queues()).find((q) => q.name === 'test.idle')?.arguments).not.toHaveProperty('x-single-active-consumer');
  });
});

describe('publisher', () => {
  it('resolves once the broker confirmed, with the contract properties', async () => {
    const event = mention('confirmed');
    await messaging.publisher.publish(event, { routingKey: 'test.idle' });
    const [msg] = await eventually('message in test.idle', async () => {
      const got = await vhost.take('test.idle', 1);
      return got.length ? got : undefined;
    });
    expect(JSON.parse(msg.body)).toEqual(event);
    expect(msg.properties).toMatchObject({ message_id: event.id, type: 'user.mentioned', correlation_id: event.correlationId });
    expect(msg.properties.headers).toMatchObject({ 'x-schema-version': 1 });
  });

  it('rejects an unroutable publish instead of dropping it', async () => {
    await expect(messaging.publisher.publish(mention(), { routingKey: 'nobody.listens' })).rejects.toBeInstanceOf(UnroutableError);
  });
});

describe('consumer failures', () => {
  it('walks a transient failure through every retry tier, with the delays, into the DLQ with every header', async () => {
    const attempts: Array<{ attempt: number; at: number }> = [];
    messaging.consume({
      queue: 'test.transient',
      name: 'always-busy',
      validate: validateTestEvent,
      handle: async (_e: TestEvent, ctx: MessageContext) => {
        attempts.push({ attempt: ctx.attempt, at: Date.now() });
        throw new TransientError('downstream busy');
      },
    });
    const event = mention('transient');
    await messaging.publisher.publish(event, { routingKey: 'test.transient' });
    const [dead] = await eventually('message in test.transient.dlq', async () => {
      const got = await vhost.take('test.transient.dlq', 1);
      return got.length ? got : undefined;
    });
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(280);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(580);
    expect(JSON.parse(dead.body)).toEqual(event);
    expect(dead.properties.message_id).toBe(event.id);
    expect(dead.properties.headers).toMatchObject({
      'x-error-class': 'TransientError',
      'x-error-message': 'downstream busy',
      'x-error-kind': 'retries-exhausted',
      'x-attempts': 3,
      'x-original-queue': 'test.transient',
      'x-original-routing-key': 'test.transient',
      'x-handler': 'always-busy',
    });
    const h = dead.properties.headers!;
    expect(Date.parse(String(h['x-first-failure-at']))).toBeLessThanOrEqual(Date.parse(String(h['x-dead-lettered-at'])));
    expect(await vhost.depth('test.transient')).toEqual({ ready: 0, unacked: 0, total: 0 });
  });

  it('sends a permanent failure straight to the DLQ', async () => {
    let calls = 0;
    messaging.consume({
      queue: 'test.permanent',
      name: 'refuses',
      validate: validateTestEvent,
      handle: async () => {
        calls += 1;
        throw new PermanentError('comment c-9 does not exist', 'MISSING_REFERENCE');
      },
    });
    await messaging.publisher.publish(mention('permanent'), { routingKey: 'test.permanent' });
    const [dead] = await eventually('message in test.permanent.dlq', async () => {
      const got = await vhost.take('test.permanent.dlq', 1);
      return got.length ? got : undefined;
    });
    expect(calls).toBe(1);
    expect(dead.properties.headers).toMatchObject({ 'x-error-class': 'PermanentError', 'x-error-kind': 'permanent', 'x-attempts': 1 });
    expect(await vhost.depth('test.permanent.retry.300ms')).toMatchObject({ total: 0 });
  });

  it('dead-letters malformed and invalid bodies with the validator’s reason, and keeps serving', async () => {
    const handled: string[] = [];
    messaging.consume({ queue: 'test.malformed', name: 'records', validate: validateTestEvent, handle: async (e: TestEvent) => void handled.push(e.id) });
    const raw = await amqpConnect(vhost.url);
    const ch = await raw.createConfirmChannel();
    ch.publish('test.events', 'test.malformed', Buffer.from('{not json'), { messageId: 'bad-1', persistent: true });
    const missingField = { ...mention(), data: { excerpt: 'x' } };
    ch.publish('test.events', 'test.malformed', Buffer.from(JSON.stringify(missingField)), { messageId: 'bad-2', persistent: true });
    await ch.waitForConfirms();
    await raw.close();
    const good = mention('after the bad ones');
    await messaging.publisher.publish(good, { routingKey: 'test.malformed' });

    // `take` removes what it returns: keep what each poll got, the two may arrive a poll apart.
    const dead: PeekedMessage[] = [];
    await eventually('two messages in test.malformed.dlq', async () => {
      dead.push(...(await vhost.take('test.malformed.dlq', 2)));
      return dead.length >= 2;
    });
    expect(dead).toHaveLength(2);
    const byId = Object.fromEntries(dead.map((d) => [d.properties.message_id, d.properties.headers]));
    expect(byId['bad-1']).toMatchObject({ 'x-error-class': 'InvalidTestEvent', 'x-error-kind': 'permanent', 'x-attempts': 1 });
    expect(byId['bad-2']).toMatchObject({ 'x-error-class': 'InvalidTestEvent', 'x-error-message': expect.stringContaining('/data/userId') });
    await eventually('the valid message handled', () => handled.includes(good.id));
    expect(handled).toEqual([good.id]);
  });

  it('stops a handler that keeps working past its deadline, and retries the message', async () => {
    // A handler that does not wait for the abort: it works in 10 ms steps and would go on for ever,
    // checking its signal between steps as real work does (a query, an HTTP call).
    const work = { startedAt: 0, abortedAt: 0, stoppedAt: 0, steps: 0, reason: undefined as unknown };
    const attempts: number[] = [];
    messaging.consume({
      queue: 'test.timeout',
      name: 'slow-first',
      timeoutMs: 200,
      validate: validateTestEvent,
      handle: async (_e: TestEvent, ctx: MessageContext) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt > 1) return 'processed';
        work.startedAt = Date.now();
        ctx.signal.addEventListener('abort', () => (work.abortedAt = Date.now()));
        try {
          for (;;) {
            ctx.signal.throwIfAborted();
            work.steps += 1;
            await sleep(10);
          }
        } catch (err) {
          work.reason = err;
          throw err;
        } finally {
          work.stoppedAt = Date.now();
        }
      },
    });
    await messaging.publisher.publish(mention('slow'), { routingKey: 'test.timeout' });
    await eventually('second attempt', () => attempts.includes(2));
    const stepsAtRetry = work.steps;
    await sleep(300);
    expect(work.steps).toBe(stepsAtRetry); // nothing ran after it stopped
    expect(work.abortedAt - work.startedAt).toBeGreaterThanOrEqual(190);
    expect(work.stoppedAt).toBeGreaterThan(0);
    expect(work.stoppedAt - work.abortedAt).toBeLessThan(100); // it stopped at its next step
    expect(work.reason).toBeInstanceOf(HandlerTimeoutError);
    expect(attempts).toEqual([1, 2]);
    expect(await vhost.depth('test.timeout.dlq')).toMatchObject({ total: 0 });
  });

  it('runs at most `concurrency` handlers at once', async () => {
    let running = 0;
    let peak = 0;
    let done = 0;
    messaging.consume({
      queue: 'test.concurrency',
      name: 'counts',
      prefetch: 20,
      concurrency: 3,
      validate: validateTestEvent,
      handle: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await sleep(20);
        running -= 1;
        done += 1;
      },
    });
    await Promise.all(Array.from({ length: 30 }, () => messaging.publisher.publish(mention(), { routingKey: 'test.concurrency' })));
    await eventually('30 handled', () => done === 30);
    expect(peak).toBe(3);
  });
});
