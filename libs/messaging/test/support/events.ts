import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { PermanentError, type EnvelopeLike, type Topology } from '../../src';

/**
 * The runtime knows no contract, so its tests bring a tiny one: an envelope with a `data` object,
 * checked by `validateTestEvent`. (The community contract is tested in libs/contracts.)
 */
export interface TestEvent extends EnvelopeLike {
  producer: string;
  data: { excerpt: string; userId: string };
}

/** An event whose excerpt can carry a test instruction. */
export function mention(excerpt = 'hello', id = randomUUID()): TestEvent {
  return {
    id,
    type: 'user.mentioned',
    version: 1,
    occurredAt: new Date().toISOString(),
    producer: 'test',
    correlationId: id,
    data: { excerpt, userId: 'u-2' },
  };
}

/** A body that is not a TestEvent: permanent, with the JSON pointer of the first problem. */
export class InvalidTestEvent extends PermanentError {
  override name = 'InvalidTestEvent';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path}: ${reason}`, 'INVALID_TEST_EVENT');
  }
}

export function validateTestEvent(body: Buffer): TestEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidTestEvent('', 'malformed JSON');
  }
  const e = raw as Partial<TestEvent> | null;
  for (const key of ['id', 'type', 'occurredAt', 'correlationId'] as const) {
    if (typeof e?.[key] !== 'string') throw new InvalidTestEvent(`/${key}`, 'expected a string');
  }
  if (typeof e?.data?.excerpt !== 'string') throw new InvalidTestEvent('/data/excerpt', 'expected a string');
  if (typeof e.data.userId !== 'string') throw new InvalidTestEvent('/data/userId', 'expected a string');
  return e as TestEvent;
}

/** One queue per scenario, each bound to its own routing key (unless given), with short retry tiers. */
export function testTopology(
  queues: Array<{
    name: string;
    routingKeys?: string[];
    retryDelaysMs?: number[];
    deliveryLimit?: number;
    maxLength?: number;
    singleActiveConsumer?: boolean;
  }>,
): Topology {
  return {
    exchanges: [{ name: 'test.events', type: 'topic' }],
    queues: queues.map((q) => ({
      name: q.name,
      bindings: [{ exchange: 'test.events', routingKeys: q.routingKeys ?? [q.name] }],
      retryDelaysMs: q.retryDelaysMs ?? [300, 600],
      deliveryLimit: q.deliveryLimit ?? 3,
      ...(q.maxLength ? { maxLength: q.maxLength } : {}),
      ...(q.singleActiveConsumer ? { singleActiveConsumer: true } : {}),
    })),
  };
}

/** Silent unless TEST_LOG_LEVEL is set (e.g. TEST_LOG_LEVEL=debug npx jest libs/messaging). */
export function testLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

/**
 * A logger whose lines the test reads back: what the runtime tried (and logged) is the condition a
 * test waits for, instead of a fixed wait for it to have had the chance.
 */
export function recordingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}
