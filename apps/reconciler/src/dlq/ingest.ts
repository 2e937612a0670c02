import { setTimeout as sleep } from 'node:timers/promises';
import type amqplib from 'amqplib';
import type { ConsumeMessage } from 'amqplib';
import { connectToAny } from '@community/messaging';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { classifyPgError, pgUnavailable, sqlState, withTransaction } from '@community/db';
import { readDeadLetter, storableText, type DeadLetter } from './dead-letter';
import type { DlqMetrics } from './metrics';
import { insertDeadLetter } from './store';

export interface IngestOptions {
  url: string;
  connectionName: string;
  /** How often a DLQ that does not exist yet is looked for again. */
  retryMs?: number;
  pool: Pool;
  dlqs: readonly string[];
  logger: Logger;
  metrics: DlqMetrics;
  /** Unacked deliveries per DLQ channel. */
  prefetch?: number;
}

/**
 * Moves every DLQ into Postgres: consume, store (idempotent), ack after the commit. A crash between
 * commit and ack redelivers a copy that is already stored: the unique key (message id + dead-letter
 * time) makes it a no-op, and it is acked. An insert that failed for the moment (database down,
 * by error type and SQLSTATE) nacks with requeue after a pause, so the message stays in its DLQ;
 * DLQs have no delivery limit (only work queues get the policy), so requeueing never loses it. An
 * insert refused for what the copy holds would fail at every redelivery: readDeadLetter makes every
 * text storable, and a copy still refused is stored without its headers and properties.
 *
 * Plain amqplib with its own reconnect loop rather than amqp-connection-manager: a DLQ that does
 * not exist yet (its service has not declared its topology) closes the channel on `checkQueue`, and
 * the manager only re-creates a channel after a *connection* loss, so it would never read that
 * queue. Here a missing DLQ is probed again every `retryMs` on a throwaway channel.
 */
export function createIngest(options: IngestOptions): { start(): Promise<void>; stop(): Promise<void>; consuming(): string[] } {
  const { url, pool, dlqs, logger, metrics } = options;
  const retryMs = options.retryMs ?? 5000;
  let stopping = false;
  let conn: amqplib.ChannelModel | null = null;
  const inFlight = new Set<Promise<void>>();
  const consumingNow = new Set<string>();
  let loop: Promise<void> | null = null;
  const wake = new AbortController();

  async function handle(ch: amqplib.Channel, queue: string, msg: ConsumeMessage): Promise<void> {
    const letter = readDeadLetter(queue, msg);
    let stored: { inserted: boolean; newCause: boolean };
    try {
      stored = await withTransaction(pool, (tx) => insertDeadLetter(tx, letter));
    } catch (err) {
      if (isTransient(err)) return requeue(ch, msg, err, queue, letter.messageId);
      // Refused for what it holds, not for the moment (readDeadLetter already made every text
      // storable; this is whatever is left): the same insert would fail at every redelivery, so the
      // copy is stored without its headers and properties, the refusal recorded in their place.
      logger.error({ err, queue, messageId: letter.messageId }, 'dlq ingest: the database refused this dead letter; storing it without its headers');
      try {
        stored = await withTransaction(pool, (tx) => insertDeadLetter(tx, withoutHeaders(letter, err)));
      } catch (again) {
        return requeue(ch, msg, again, queue, letter.messageId);
      }
    }
    ch.ack(msg);
    if (stored.inserted) metrics.ingested.inc({ queue });
    if (stored.newCause) {
      metrics.newCauses.inc();
      logger.warn(
        { queue, originalQueue: letter.originalQueue, fingerprint: letter.fingerprint, errorClass: letter.errorClass, handler: letter.handler, messageType: letter.messageType },
        'dlq: a cause never seen before',
      );
    }
  }

  /** The database is unavailable for the moment: the copy stays in its DLQ, tried again in a second. */
  async function requeue(ch: amqplib.Channel, msg: ConsumeMessage, err: unknown, queue: string, messageId: string): Promise<void> {
    logger.error({ err, queue, messageId }, 'dlq ingest failed; the message stays in its DLQ');
    if (!stopping) await sleep(1000);
    try {
      ch.nack(msg, false, true);
    } catch {
      // The channel is gone: the broker requeues the delivery by itself.
    }
  }

  async function exists(c: amqplib.ChannelModel, queue: string): Promise<boolean> {
    const probe = await c.createChannel();
    probe.on('error', () => undefined);
    try {
      await probe.checkQueue(queue);
      await probe.close().catch(() => undefined);
      return true;
    } catch {
      return false;
    }
  }

  /** One connection's life: consume what exists, probe the rest, return when the connection ends. */
  async function session(first: () => void): Promise<void> {
    const c = await connectToAny(url, { clientProperties: { connection_name: options.connectionName } });
    conn = c;
    const closed = new Promise<void>((resolve) => c.on('close', () => resolve()));
    c.on('error', (err: Error) => logger.warn({ err: err.message }, 'dlq ingest connection error'));
    const ch = await c.createChannel();
    ch.on('error', (err: Error) => logger.warn({ err: err.message }, 'dlq ingest channel error'));
    // A lost channel or a consumer cancelled by the broker (its DLQ deleted) starts a new session,
    // which probes and subscribes again: nothing stays silently unread.
    const restart = (why: string) => {
      if (stopping) return;
      logger.warn({ why }, 'dlq ingest: reconnecting');
      c.close().catch(() => undefined);
    };
    ch.on('close', () => restart('channel closed'));
    await ch.prefetch(options.prefetch ?? 20);
    const waiting = new Set(dlqs);
    const attach = async () => {
      for (const queue of [...waiting]) {
        if (!(await exists(c, queue))) continue;
        await ch.consume(queue, (msg) => {
          if (!msg) return restart(`consumer of ${queue} cancelled by the broker`);
          const p = handle(ch, queue, msg);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        });
        waiting.delete(queue);
        consumingNow.add(queue);
      }
      if (waiting.size > 0) logger.warn({ missing: [...waiting] }, `dlq ingest: DLQs not declared yet; probing every ${retryMs} ms`);
    };
    await attach();
    first();
    while (!stopping && waiting.size > 0) {
      const ended = await Promise.race([closed.then(() => true), sleep(retryMs, false, { signal: wake.signal }).catch(() => true)]);
      if (ended) break;
      await attach();
    }
    await closed;
    consumingNow.clear();
  }

  return {
    start() {
      if (dlqs.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        let resolved = false;
        const first = () => {
          if (!resolved) {
            resolved = true;
            logger.info({ dlqs }, 'dlq ingest consuming');
            resolve();
          }
        };
        loop = (async () => {
          let failures = 0;
          while (!stopping) {
            try {
              await session(first);
              failures = 0;
            } catch (err) {
              failures += 1;
              logger.warn({ err: (err as Error).message }, 'dlq ingest: broker unavailable; retrying');
              first(); // start() does not wait for the broker: the loop keeps trying.
            }
            conn = null;
            if (!stopping) await sleep(Math.min(15_000, 250 * 2 ** Math.min(failures, 6)), undefined, { signal: wake.signal }).catch(() => undefined);
          }
        })();
      });
    },
    async stop() {
      stopping = true;
      wake.abort();
      await Promise.allSettled([...inFlight]);
      await conn?.close().catch(() => undefined);
      await loop;
    },
    consuming: () => [...consumingNow],
  };
}

/**
 * A failure about the moment, by error type and SQLSTATE (never message text): the database is
 * unreachable or restarting (libs/db `pgUnavailable`), or refused for the moment (serialization,
 * resources, operator intervention: `classifyPgError`). Anything else fails the same way again.
 */
function isTransient(err: unknown): boolean {
  return pgUnavailable(err) !== undefined || classifyPgError(err) === 'transient';
}

/** The copy as a row the database takes: headers and properties replaced by why they are missing. */
function withoutHeaders(letter: DeadLetter, err: unknown): DeadLetter {
  const why = storableText(`${sqlState(err) ?? 'no SQLSTATE'}: ${(err as Error)?.message ?? String(err)}`.slice(0, 500));
  return { ...letter, properties: {}, headers: { 'x-dlq-unstorable': why } };
}
