import { setTimeout as sleep } from 'node:timers/promises';
import type amqplib from 'amqplib';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { withTransaction } from '@community/db';
import { brokerUserOf, connectToAny, queueExchangeName } from '@community/messaging';
import { replayHeaders } from './dead-letter';
import type { DlqMetrics } from './metrics';
import {
  claimReplayBatch,
  claimStaleOperation,
  finishOperation,
  heartbeat,
  recordReplay,
  type ReplayItem,
} from './store';

export interface ReplayerOptions {
  url: string;
  connectionName: string;
  pool: Pool;
  /** The work queues of the topology: the only queues a replay may publish to. */
  workQueues: ReadonlySet<string>;
  logger: Logger;
  metrics: DlqMetrics;
  batchSize?: number;
  /** A running replay untouched this long is taken over by another runner (default 30 s). */
  staleMs?: number;
  /** How often a replica looks for such operations (default 10 s). */
  sweepMs?: number;
}

export const DEFAULT_RATE_PER_SECOND = 50;
export const MAX_RATE_PER_SECOND = 1000;

/**
 * Runs replay operations in the background, one message after the other at `ratePerSecond`:
 * claim a batch (pending|replayed → replaying), publish each message to its original queue through
 * the queue's own exchange `<queue>.direct` (never the topic exchange: that would deliver it to every other bound
 * queue again) with its original messageId, wait for the broker's confirm, record the result. The
 * operation row's counters are the progress the console and the CLI poll.
 *
 * `mandatory`: a copy to a queue that no longer exists is returned by the broker, and is recorded
 * as failed (the message goes back to pending) instead of being confirmed and silently dropped.
 */
export function createReplayer(options: ReplayerOptions) {
  const { pool, logger, metrics } = options;
  const batchSize = options.batchSize ?? 50;
  const running = new Map<string, Promise<void>>();
  const stopping = new AbortController();
  let sweeper: NodeJS.Timeout | null = null;

  async function publishAll(operationId: string, ratePerSecond: number): Promise<void> {
    const conn = await connectToAny(options.url, { clientProperties: { connection_name: options.connectionName } });
    conn.on('error', (err: Error) => logger.warn({ err: err.message, operationId }, 'dlq replay connection error'));
    const lost = new Promise<never>((_resolve, reject) =>
      conn.on('close', () => reject(new Error('broker connection closed during the replay'))),
    );
    lost.catch(() => undefined);
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => undefined);
    let returned = new Set<string>();
    ch.on('return', (m: amqplib.Message) => returned.add(String(m.properties.messageId)));
    const intervalMs = 1000 / ratePerSecond;
    let next = Date.now();
    try {
      for (;;) {
        if (stopping.signal.aborted) return; // left running: taken over after the restart
        const { items, skipped } = await withTransaction(pool, (tx) => claimReplayBatch(tx, operationId, batchSize));
        if (skipped > 0) metrics.actions.inc({ action: 'replay', outcome: 'skipped' }, skipped);
        if (items.length === 0) break;
        for (let i = 0; i < items.length; i++) {
          const item = items[i];
          const wait = next - Date.now();
          if (wait > 0) await sleep(wait, undefined, { signal: stopping.signal }).catch(() => undefined);
          // Stopping: the rest stays claimed and unpublished; whoever takes the operation over sends it.
          if (stopping.signal.aborted) return;
          next = Math.max(next + intervalMs, Date.now() - 1000);
          let ok = false;
          let detail: string | null = null;
          if (!options.workQueues.has(item.originalQueue)) {
            detail = `original queue '${item.originalQueue}' is not a work queue of the topology`;
          } else {
            try {
              returned = new Set();
              await Promise.race([publish(ch, item, operationId), lost]);
              if (returned.has(item.messageId))
                detail = `queue '${item.originalQueue}' does not exist (returned by the broker)`;
              else ok = true;
            } catch (err) {
              // The connection is gone: this and the rest of the batch go back to pending.
              const rest = items.slice(i);
              for (const r of rest)
                await withTransaction(pool, (tx) => recordReplay(tx, operationId, r.id, false, (err as Error).message));
              metrics.actions.inc({ action: 'replay', outcome: 'failed' }, rest.length);
              throw err;
            }
          }
          await withTransaction(pool, (tx) => recordReplay(tx, operationId, item.id, ok, detail));
          metrics.actions.inc({ action: 'replay', outcome: ok ? 'ok' : 'failed' });
        }
        await heartbeat(pool, operationId);
      }
    } finally {
      await conn.close().catch(() => undefined);
    }
  }

  function publish(ch: amqplib.ConfirmChannel, item: ReplayItem, operationId: string): Promise<void> {
    const p = item.properties as amqplib.Options.Publish & { type?: string };
    return new Promise((resolve, reject) => {
      // Through the original queue's own exchange (bound to it by its name), never the default
      // exchange, which no broker user may write to; user-id is this connection's user (the broker
      // refuses another), which consumers accept from a replayer (docs/MESSAGING.md "Broker identity").
      ch.publish(
        queueExchangeName(item.originalQueue),
        item.originalQueue,
        item.body,
        {
          mandatory: true,
          persistent: true,
          contentType: p.contentType,
          contentEncoding: p.contentEncoding,
          correlationId: p.correlationId,
          type: p.type,
          timestamp: p.timestamp,
          appId: p.appId,
          userId: brokerUserOf(options.url),
          messageId: item.messageId.startsWith('sha256:') ? undefined : item.messageId,
          headers: replayHeaders(item.headers, operationId, item.replayCount + 1),
        },
        (err: unknown) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
      );
    });
  }

  function run(operationId: string, ratePerSecond: number): Promise<void> {
    const existing = running.get(operationId);
    if (existing) return existing;
    const p = (async () => {
      try {
        await publishAll(operationId, ratePerSecond);
        if (!stopping.signal.aborted) await finishOperation(pool, operationId, null);
        logger.info({ operationId }, 'dlq replay finished');
      } catch (err) {
        logger.error({ err, operationId }, 'dlq replay failed');
        await finishOperation(pool, operationId, (err as Error).message).catch((e) =>
          logger.error({ err: e }, 'dlq replay: recording the failure failed'),
        );
      } finally {
        running.delete(operationId);
      }
    })();
    running.set(operationId, p);
    return p;
  }

  async function sweep(): Promise<void> {
    const id = await claimStaleOperation(pool, options.staleMs ?? 30_000);
    if (!id) return;
    const { rows } = await pool.query<{ rate: number | null }>(
      `SELECT rate_per_second AS rate FROM dlq_operations WHERE id = $1::bigint`,
      [id],
    );
    logger.warn({ operationId: id }, 'dlq replay: taking over an operation whose runner stopped');
    void run(id, rows[0]?.rate ?? DEFAULT_RATE_PER_SECOND);
  }

  return {
    run,
    start() {
      const tick = () => {
        sweep()
          .catch((err) => logger.warn({ err }, 'dlq replay sweep failed'))
          .finally(() => {
            if (!stopping.signal.aborted) sweeper = setTimeout(tick, options.sweepMs ?? 10_000).unref();
          });
      };
      tick();
    },
    async stop() {
      stopping.abort();
      if (sweeper) clearTimeout(sweeper);
      await Promise.allSettled([...running.values()]);
    },
  };
}
