import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { Registry } from 'prom-client';
import { createMessaging, type Messaging } from '../src';
import { createTestVhost, eventually, type TestVhost } from './support/broker';
import { bundleChildScript, type ChildScript } from './support/child-script';
import { mention, testLogger, testTopology } from './support/events';

/** Faults injected for real: the consumer is a separate process that dies or gets SIGTERM. */
let vhost: TestVhost;
let publisherSide: Messaging;
let childConsumer: ChildScript;

beforeAll(async () => {
  childConsumer = await bundleChildScript(path.join(__dirname, 'child-consumer.ts'));
  vhost = await createTestVhost('process');
  publisherSide = createMessaging({
    url: vhost.url,
    service: 'process-test',
    topology: testTopology([
      { name: 'test.crash', deliveryLimit: 1 },
      { name: 'test.drain', deliveryLimit: 20 },
    ]),
    logger: testLogger(),
    registry: new Registry(),
    classifiers: [],
  });
  await publisherSide.start();
});

afterAll(async () => {
  await publisherSide.stop(1000);
  await Promise.all([vhost.delete(), childConsumer.remove()]);
});

interface Child {
  proc: ChildProcess;
  handled: string[];
  ready: Promise<void>;
}

function startChild(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, childConsumer.args, {
    env: { ...process.env, AMQP_URL: vhost.url, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const handled: string[] = [];
  let buffered = '';
  let onReady: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      if (line === 'READY') onReady();
      if (line.startsWith('HANDLED ')) handled.push(line.slice(8));
    }
  });
  return { proc, handled, ready };
}

it('dead-letters a message that kills its consumer on every delivery, through the delivery limit', async () => {
  const poison = mention('kills its consumer');
  await publisherSide.publisher.publish(poison, { routingKey: 'test.crash' });
  let spawns = 0;
  const exits: unknown[] = [];
  // Each crash returns the message with a higher delivery count; past the limit (1) the broker
  // dead-letters it at-least-once to the DLQ instead of handing it to a consumer again.
  while ((await vhost.ready('test.crash.dlq')) === 0) {
    expect(spawns).toBeLessThan(6);
    const child = startChild({ CHILD_MODE: 'crash', CHILD_QUEUE: 'test.crash' });
    spawns += 1;
    const [code, signal] = await once(child.proc, 'exit');
    exits.push(signal ?? code);
  }
  expect(exits.every((e) => e === 'SIGKILL')).toBe(true); // every run died in the handler
  expect(spawns).toBeGreaterThanOrEqual(2); // limit 1: the second return dead-letters it
  const [dead] = await vhost.take('test.crash.dlq', 1);
  expect(dead.properties.message_id).toBe(poison.id);
  const death = (dead.properties.headers?.['x-death'] as Array<{ reason: string; queue: string }>)[0];
  expect(death).toMatchObject({ reason: 'delivery_limit', queue: 'test.crash' });
  // At-least-once dead-lettering keeps the message in the source queue until the DLQ confirmed it.
  await eventually('source queue released the message', async () => (await vhost.depth('test.crash')).total === 0);
}, 60_000);

it('SIGTERM under load finishes in-flight work, returns the rest, and nothing is handled twice', async () => {
  const events = Array.from({ length: 120 }, (_, i) => mention(`load ${i}`));
  await Promise.all(events.map((e) => publisherSide.publisher.publish(e, { routingKey: 'test.drain' })));

  const first = startChild({
    CHILD_MODE: 'slow',
    CHILD_QUEUE: 'test.drain',
    CHILD_HANDLER_MS: '150',
    CHILD_PREFETCH: '10',
  });
  await first.ready;
  await eventually('some handled', () => first.handled.length >= 15);
  first.proc.kill('SIGTERM');
  const [code] = await once(first.proc, 'exit');
  expect(code).toBe(0);
  // The graceful stop acked what it finished and returned what it had not started.
  await eventually(
    'nothing unacked after the graceful stop',
    async () => (await vhost.depth('test.drain')).unacked === 0,
  );
  expect(first.handled.length).toBeLessThan(events.length);

  const second = startChild({
    CHILD_MODE: 'slow',
    CHILD_QUEUE: 'test.drain',
    CHILD_HANDLER_MS: '5',
    CHILD_PREFETCH: '50',
  });
  await eventually('all handled', () => first.handled.length + second.handled.length >= events.length, 30_000);
  second.proc.kill('SIGTERM');
  await once(second.proc, 'exit');

  const all = [...first.handled, ...second.handled];
  expect(all).toHaveLength(events.length); // no message handled twice (no redelivery of finished work)
  expect(new Set(all)).toEqual(new Set(events.map((e) => e.id))); // nothing lost
  // Quorum queues apply settlements through their Raft log: the count settles a moment later.
  await eventually('test.drain empty', async () => (await vhost.depth('test.drain')).total === 0);
}, 60_000);
