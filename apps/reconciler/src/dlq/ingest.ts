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
  /**
   * The pause before storing a dead letter again after the database failed for the moment; it
   * doubles at each failure of that copy up to `storeRetryMaxMs`. Default 1 s, up to 30 s.
   */
  storeRetryMs?: number;
  storeRetryMaxMs?: number;
}

/**
 * Moves every DLQ into Postgres: consume, store (idempotent), ack after the commit. A crash between
 * commit and ack redelivers a copy that is already stored: the unique key (message id + dead-letter
 * time) makes it a no-op, and it is acked. An insert that failed for the moment (database down,
 * by error type and SQLSTATE) is tried again by the ingest itself, with backoff, while the copy stays
 * unacked on its channel: it is never nacked with requeue. A requeue counts toward the DLQ's
 * delivery limit, and a DLQ has no dead-letter exchange, so a copy past the limit is dropped: since
 * RabbitMQ 4.0 a quorum queue without a limit set has one of 20 (rabbitmq-server #11937), which a
 * requeue a second reaches in 20 s of a database outage. So the delivery count of a held copy rises
 * only when its channel is lost (broker or connection loss, the broker's `consumer_timeout`), and
 * every DLQ has an explicit limit far above that (`DLQ_DELIVERY_LIMIT`, libs/messaging plan.ts).
 * The prefetch bounds how many copies are held at once; the rest wait in the DLQ, uncounted.
 * An insert refused for what the copy holds would fail at every redelivery: readDeadLetter makes
 * every text storable, and a copy still refused is stored without its headers and properties.
 *
 * Plain amqplib with its own reconnect loop rather than amqp-connection-manager: a DLQ that does
 * not exist yet (its service has not declared its topology) closes the channel on `checkQueue`, and
 * the manager only re-creates a channel after a *connection* loss, so it would never read that
 * queue. Here a missing DLQ is probed again every `retryMs` on a throwaway channel.
 */
export function createIngest(options: IngestOptions): {
  start(): Promise<void>;
  stop(): Promise<void>;
  consuming(): string[];
} {
  const { url, pool, dlqs, logger, metrics } = options;
  const retryMs = options.retryMs ?? 5000;
  let stopping = false;
  let conn: amqplib.ChannelModel | null = null;
  const inFlight = new Set<Promise<void>>();
  const consumingNow = new Set<string>();
  let loop: Promise<void> | null = null;
  const wake = new AbortController();

  const storeRetryMs = options.storeRetryMs ?? 1000;
  const storeRetryMaxMs = options.storeRetryMaxMs ?? 30_000;

  /** One try at storing the copy: whole, or, when refused for what it holds, without its headers. */
  async function store(queue: string, letter: DeadLetter): Promise<{ inserted: boolean; newCause: boolean }> {
    try {
      return await withTransaction(pool, (tx) => insertDeadLetter(tx, letter));
    } catch (err) {
      if (isTransient(err)) throw err;
      // Refused for what it holds, not for the moment (readDeadLetter already made every text
      // storable; this is whatever is left): the same insert would fail at every redelivery, so the
      // copy is stored without its headers and properties, the refusal recorded in their place.
      logger.error(
        { err, queue, messageId: letter.messageId },
        'dlq ingest: the database refused this dead letter; storing it without its headers',
      );
      return withTransaction(pool, (tx) => insertDeadLetter(tx, withoutHeaders(letter, err)));
    }
  }

  /**
   * Stores the copy, then acks it. Until it is stored the copy stays unacked and is tried again
   * here, never requeued (see above); when its channel is gone (the broker has already returned it,
   * and the next session gets it again) or the ingest stops, it is left to the broker.
   */
  async function handle(ch: amqplib.Channel, open: () => boolean, queue: string, msg: ConsumeMessage): Promise<void> {
    const letter = readDeadLetter(queue, msg);
    let stored: { inserted: boolean; newCause: boolean } | undefined;
    for (let failures = 0; stored === undefined; failures += 1) {
      try {
        stored = await store(queue, letter);
      } catch (err) {
        if (stopping || !open()) return;
        const pauseMs = Math.min(storeRetryMaxMs, storeRetryMs * 2 ** Math.min(failures, 20));
        logger.error(
          { err, queue, messageId: letter.messageId, failures: failures + 1, retryInMs: pauseMs },
          'dlq ingest failed; the message stays in its DLQ, unacked, and is stored again later',
        );
        await sleep(pauseMs, undefined, { signal: wake.signal }).catch(() => undefined);
        if (stopping || !open()) return;
      }
    }
    try {
      ch.ack(msg);
    } catch {
      // The channel closed after the commit: the copy comes back and is a no-op (its unique key).
      return;
    }
    if (stored.inserted) metrics.ingested.inc({ queue });
    if (stored.newCause) {
      metrics.newCauses.inc();
      logger.warn(
        {
          queue,
          originalQueue: letter.originalQueue,
          fingerprint: letter.fingerprint,
          errorClass: letter.errorClass,
          handler: letter.handler,
          messageType: letter.messageType,
        },
        'dlq: a cause never seen before',
      );
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
    let channelOpen = true;
    const open = () => channelOpen;
    ch.on('close', () => {
      channelOpen = false;
      restart('channel closed');
    });
    await ch.prefetch(options.prefetch ?? 20);
    const waiting = new Set(dlqs);
    const attach = async () => {
      for (const queue of [...waiting]) {
        if (!(await exists(c, queue))) continue;
        await ch.consume(queue, (msg) => {
          if (!msg) return restart(`consumer of ${queue} cancelled by the broker`);
          const p = handle(ch, open, queue, msg);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        });
        waiting.delete(queue);
        consumingNow.add(queue);
      }
      if (waiting.size > 0)
        logger.warn({ missing: [...waiting] }, `dlq ingest: DLQs not declared yet; probing every ${retryMs} ms`);
    };
    await attach();
    first();
    while (!stopping && waiting.size > 0) {
      const ended = await Promise.race([
        closed.then(() => true),
        sleep(retryMs, false, { signal: wake.signal }).catch(() => true),
      ]);
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
            if (!stopping)
              await sleep(Math.min(15_000, 250 * 2 ** Math.min(failures, 6)), undefined, { signal: wake.signal }).catch(
                () => undefined,
              );
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
  const why = storableText(
    `${sqlState(err) ?? 'no SQLSTATE'}: ${(err as Error)?.message ?? String(err)}`.slice(0, 500),
  );
  return { ...letter, properties: {}, headers: { 'x-dlq-unstorable': why } };
}
