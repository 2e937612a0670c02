import { Registry } from 'prom-client';
import { connect as amqpConnect } from 'amqplib';
import { createTestVhost, eventually, testLogger, type PeekedMessage, type TestVhost } from '@community/testing';
import { createMessaging, PermanentError, TransientError, UnroutableError, type Messaging, type MessageContext } from '../src';
import type { AnyEvent } from '@community/contracts';
import { mention, testTopology } from './fixtures';

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

function newMessaging(): Messaging {
  const m = createMessaging({ url: vhost.url, service: 'runtime-test', topology, logger: testLogger(), registry: new Registry() });
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
  it('declaring the topology twice is a no-op', async () => {
    await messaging.start();
    const second = newMessaging();
    await second.start(); // same declarations again: no PRECONDITION_FAILED, nothing duplicated
    const res = await fetch(`${vhost.management.baseUrl}/api/queues/${encodeURIComponent(vhost.vhost)}`, {
      headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
    });
    const queues = (await res.json()) as Array<{ name: string; type: string; policy?: string; arguments: Record<string, unknown> }>;
    const names = queues.map((q) => q.name).sort();
    expect(names).toContain('test.transient.retry.300ms');
    expect(names).toContain('test.transient.dlq');
    expect(new Set(names).size).toBe(names.length);
    expect(queues.every((q) => q.type === 'quorum')).toBe(true);
    const policies = (await (
      await fetch(`${vhost.management.baseUrl}/api/policies/${encodeURIComponent(vhost.vhost)}`, {
        headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
      })
    ).json()) as Array<{ name: string; definition: Record<string, unknown> }>;
    expect(policies.find((p) => p.name === 'community:test.transient')?.definition).toMatchObject({
      'delivery-limit': 3,
      'dead-letter-exchange': 'community.dlx',
      'dead-letter-strategy': 'at-least-once',
    });
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
      handle: async (_e: AnyEvent, ctx: MessageContext) => {
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

  it('dead-letters malformed and schema-violating bodies with the reason, and keeps serving', async () => {
    const handled: string[] = [];
    messaging.consume({ queue: 'test.malformed', name: 'records', handle: async (e: AnyEvent) => void handled.push(e.id) });
    const raw = await amqpConnect(vhost.url);
    const ch = await raw.createConfirmChannel();
    ch.publish('community.events', 'test.malformed', Buffer.from('{not json'), { messageId: 'bad-1', persistent: true });
    const missingField = { ...mention(), data: { commentId: 'c', postId: 'p', actorId: 'a', excerpt: 'x' } };
    ch.publish('community.events', 'test.malformed', Buffer.from(JSON.stringify(missingField)), { messageId: 'bad-2', persistent: true });
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
    expect(byId['bad-1']).toMatchObject({ 'x-error-class': 'ContractError', 'x-error-kind': 'permanent' });
    expect(byId['bad-2']).toMatchObject({ 'x-error-class': 'ContractError', 'x-error-message': expect.stringContaining('/data/mentionedUserId') });
    await eventually('the valid message handled', () => handled.includes(good.id));
  });

  it('retries a handler that runs past its deadline, and aborts its signal', async () => {
    const seen: Array<{ attempt: number; aborted: boolean }> = [];
    messaging.consume({
      queue: 'test.timeout',
      name: 'slow-first',
      timeoutMs: 200,
      handle: async (_e: AnyEvent, ctx: MessageContext) => {
        if (ctx.attempt === 1) {
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
          seen.push({ attempt: 1, aborted: ctx.signal.aborted });
          return 'processed';
        }
        seen.push({ attempt: ctx.attempt, aborted: ctx.signal.aborted });
        return 'processed';
      },
    });
    await messaging.publisher.publish(mention('slow'), { routingKey: 'test.timeout' });
    await eventually('second attempt', () => seen.some((s) => s.attempt === 2));
    expect(seen).toEqual([
      { attempt: 1, aborted: true },
      { attempt: 2, aborted: false },
    ]);
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
      handle: async () => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 20));
        running -= 1;
        done += 1;
      },
    });
    await Promise.all(Array.from({ length: 30 }, () => messaging.publisher.publish(mention(), { routingKey: 'test.concurrency' })));
    await eventually('30 handled', () => done === 30);
    expect(peak).toBe(3);
  });
});
