import { setTimeout as sleep } from 'node:timers/promises';
import amqplib from 'amqplib';
import { brokerUserOf } from '@community/messaging';
import type { BadMessage, GoodEvent } from './messages';

const EXCHANGE = 'community.events';

export interface Publisher {
  bad(m: BadMessage): void;
  good(event: GoodEvent): void;
  /** Waits until the broker confirmed everything published so far. */
  confirmed(): Promise<void>;
  close(): Promise<void>;
}

/** A raw confirm channel on the exchange: the fuzz writes bytes and properties the contract forbids. */
export async function openPublisher(url: string): Promise<Publisher> {
  const conn = await amqplib.connect(url);
  const ch = await conn.createConfirmChannel();
  return {
    bad(m) {
      const { messageId, ...rest } = m.properties;
      ch.publish(EXCHANGE, m.routingKey, m.body, messageId === undefined ? rest : { ...rest, messageId });
    },
    good(event) {
      ch.publish(EXCHANGE, event.type, Buffer.from(JSON.stringify(event)), {
        contentType: 'application/json',
        persistent: true,
        messageId: event.id,
        type: event.type,
        correlationId: event.correlationId,
        // Who published it: consumers dead-letter a good event without it (docs/MESSAGING.md "Broker identity").
        userId: brokerUserOf(url),
        timestamp: Math.floor(Date.now() / 1000),
        headers: { 'x-schema-version': 1 },
      });
    },
    confirmed: () => ch.waitForConfirms(),
    async close() {
      await conn.close().catch(() => undefined);
    },
  };
}

export interface DeadLetter {
  headers: Record<string, unknown>;
  size: number;
}

/**
 * Takes every message off a queue until `count` arrived (or `timeoutMs` passed), then keeps
 * listening `lingerMs` more, so a copy beyond the expected ones shows up too. Auto-ack: an explicit
 * ack racing the connection close could leave a taken message behind, miscounted as an extra copy.
 */
export async function drain(
  url: string,
  queue: string,
  count: number,
  timeoutMs: number,
  lingerMs = 1000,
): Promise<DeadLetter[]> {
  const conn = await amqplib.connect(url);
  try {
    const ch = await conn.createChannel();
    const got: DeadLetter[] = [];
    let reached: () => void = () => undefined;
    const enough = new Promise<void>((resolve) => (reached = resolve));
    if (count === 0) reached();
    await ch.consume(
      queue,
      (msg) => {
        if (!msg) return;
        got.push({ headers: msg.properties.headers ?? {}, size: msg.content.length });
        if (got.length >= count) reached();
      },
      { noAck: true },
    );
    const waited = new AbortController();
    await Promise.race([enough, sleep(timeoutMs, undefined, { signal: waited.signal })]);
    waited.abort(); // its AbortError rejects the timer's promise, which the race has already handled
    await sleep(lingerMs);
    return got;
  } finally {
    await conn.close().catch(() => undefined);
  }
}
