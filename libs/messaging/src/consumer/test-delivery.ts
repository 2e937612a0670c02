import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import pino from 'pino';
import { Acker } from './acker';
import { newDelivery, type Delivery } from './delivery';

/**
 * For the consumer's unit specs: a delivery on a fake confirm channel that records what the
 * runtime publishes and acks, and a logger whose lines can be read back.
 */
export interface TestDelivery {
  delivery: Delivery;
  published: Array<{ exchange: string; routingKey: string; content: Buffer; options: Options.Publish }>;
  acks: Array<{ tag: number; multiple: boolean }>;
  nacks: Array<{ tag: number; requeue: boolean }>;
  logLines: Array<Record<string, unknown>>;
  shutdown: AbortController;
}

export function testDelivery(
  o: {
    body?: string;
    headers?: Record<string, unknown>;
    type?: string;
    messageId?: string;
    deliveryTag?: number;
    publishFails?: boolean;
    /** The first this many mandatory publishes are returned (basic.return) before their confirm. */
    unroutable?: number;
    logLevel?: pino.Level;
  } = {},
): TestDelivery {
  const published: TestDelivery['published'] = [];
  const acks: TestDelivery['acks'] = [];
  const nacks: TestDelivery['nacks'] = [];
  const logLines: TestDelivery['logLines'] = [];
  let unroutable = o.unroutable ?? 0;
  const channel = Object.assign(new EventEmitter(), {
    publish(
      exchange: string,
      routingKey: string,
      content: Buffer,
      options: Options.Publish,
      cb: (err: Error | null) => void,
    ) {
      published.push({ exchange, routingKey, content, options });
      const returned = options.mandatory === true && unroutable-- > 0;
      setImmediate(() => {
        if (returned)
          channel.emit('return', {
            content,
            fields: { exchange, routingKey, replyText: 'NO_ROUTE' },
            properties: options,
          });
        cb(o.publishFails ? new Error('channel closed') : null);
      });
      return true;
    },
    ack: (msg: ConsumeMessage, multiple = false) => acks.push({ tag: msg.fields.deliveryTag, multiple }),
    nack: (msg: ConsumeMessage, _allUpTo: boolean, requeue: boolean) =>
      nacks.push({ tag: msg.fields.deliveryTag, requeue }),
  }) as unknown as ConfirmChannel;
  const msg = {
    content: Buffer.from(o.body ?? '{"id":"e-1"}'),
    fields: {
      deliveryTag: o.deliveryTag ?? 1,
      redelivered: false,
      exchange: 'events',
      routingKey: 'user.mentioned',
      consumerTag: 'ctag',
    },
    properties: {
      messageId: o.messageId ?? 'e-1',
      type: o.type ?? 'user.mentioned',
      correlationId: 'corr-1',
      headers: o.headers ?? {},
      timestamp: undefined,
    },
  } as unknown as ConsumeMessage;
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const logger = pino({ level: o.logLevel ?? 'debug' }, sink).child({ queue: 'q', handler: 'h' });
  const shutdown = new AbortController();
  const delivery = newDelivery({
    channel,
    acker: new Acker(channel),
    msg,
    logger,
    queue: 'q',
    handler: 'h',
    signal: shutdown.signal,
  });
  return { delivery, published, acks, nacks, logLines, shutdown };
}
