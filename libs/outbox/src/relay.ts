import { setTimeout as sleepFor } from 'node:timers/promises';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { withTransaction } from '@community/db';
import {
  backoffDelay,
  errorMessage,
  PublishRejectedError,
  PublishTimeoutError,
  UnroutableError,
  type EnvelopeLike,
  type Publisher,
} from '@community/messaging';
import { createListener } from './listener';
import { outboxMetrics } from './metrics';
import { propagationEnabled, startPublishSpan } from './trace';
import { claimHeads, markFailed, markSent, type ClaimedRow, type Failure } from './store';

export interface RelayOptions {
  pool: Pool;
  /** Resolves only on the broker's confirm (libs/messaging's publisher). */
  publisher: Pick<Publisher, 'publish'>;
  /** Only this producer's rows are relayed (several services share the table). */
  producer: string;
  logger: Logger;
  registry: Registry;
  /** Aggregates looked at per cycle, so at most this many rows published per cycle (default 200). */
  batchSize?: number;
  /** Polling fallback when no notification arrives (default 1000 ms). */
  pollIntervalMs?: number;
  /** For the dedicated LISTEN connection (a pooled connection cannot hold LISTEN). */
  databaseUrl: string;
  /** Confirm deadline per message (default 5000 ms); the row is retried after it. */
  publishTimeoutMs?: number;
  /**
   * AMQP headers for a row's message, derived from its stored event when it is published (so rows
   * written before a header existed get it too); e.g. a header a headers exchange routes on.
   */
  headers?: (event: EnvelopeLike) => Record<string, unknown> | undefined;
}

export interface OutboxRelay {
  /** Starts listening and relaying; resolves once the first LISTEN attempt is done. */
  start(): Promise<void>;
  /** Finishes the cycle in progress (its confirms, its marks) and stops. */
  stop(): Promise<void>;
  /** For /readyz: running, the database answering its cycles, no cycle stuck. */
  isHealthy(): boolean;
}

interface CycleResult {
  claimed: number;
  /** The pass over all aggregates is not complete: some were not looked at yet. */
  more: boolean;
  /** Nothing was due: the earliest backoff among the heads seen, if any. */
  retryInMs: number | null;
}

/**
 * Failed rows wait 0.5 s, 1 s, 2 s, ... up to 60 s before the next attempt, jittered in the upper
 * half: a row that just failed gains nothing from an immediate retry.
 */
export function retryDelayMs(failedAttempts: number): number {
  return backoffDelay(failedAttempts - 1, { baseMs: 500, maxMs: 60_000, jitter: 'equal' });
}

/** A failing database is retried after 0.5 s, 1 s, 2 s, ... up to 30 s. */
const dbRetryDelayMs = (failures: number): number =>
  backoffDelay(failures, { baseMs: 250, maxMs: 30_000, jitter: 'none' });

function outcomeOf(err: unknown): string {
  if (err instanceof UnroutableError) return 'unroutable';
  if (err instanceof PublishRejectedError) return 'rejected';
  if (err instanceof PublishTimeoutError) return 'timeout';
  return 'error';
}

/**
 * Publishes outbox rows with publisher confirms and marks each row sent only after its confirm.
 * Safe to run in several processes at once; see docs/OUTBOX.md for why order per aggregate holds.
 *
 * OUTBOX_CRASH_AFTER_PUBLISH=1 (fault tests only): the process SIGKILLs itself after its first
 * confirmed publish and before marking, the window in which a crash yields a duplicate publish.
 */
export function createRelay(options: RelayOptions): OutboxRelay {
  const { pool, publisher, producer, registry } = options;
  const batchSize = options.batchSize ?? 200;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const publishTimeoutMs = options.publishTimeoutMs ?? 5000;
  const crashAfterPublish = process.env.OUTBOX_CRASH_AFTER_PUBLISH === '1';
  const logger = options.logger.child({ component: 'outbox-relay', producer });
  const metrics = outboxMetrics(registry);

  let started = false;
  let stopping = false;
  let loopDone: Promise<void> = Promise.resolve();
  let stopped: Promise<void> = Promise.resolve();
  let wakeRequested = false;
  // Aborted by wake(): ends the current sleep early (a NOTIFY, stop()).
  let sleeping: AbortController | undefined;
  let dbFailures = 0;
  let cycleStartedAt: number | undefined;
  // Round robin over aggregates: where the head scan resumes ('' = from the first aggregate).
  let cursor = '';
  // Backlog and lag are visible from creation, before start(): they describe the table, not this relay.
  const unwatch = metrics.watch(producer, pool, logger);

  function wake(): void {
    wakeRequested = true;
    sleeping?.abort();
  }

  const listener = createListener({ databaseUrl: options.databaseUrl, producer, logger, onWake: wake });

  async function sleep(ms: number): Promise<void> {
    sleeping = new AbortController();
    try {
      await sleepFor(ms, undefined, { signal: sleeping.signal });
    } catch {
      // woken early by wake()
    } finally {
      sleeping = undefined;
    }
  }

  async function publishAll(rows: ClaimedRow[]): Promise<{ sent: string[]; failed: Failure[] }> {
    // Called in id order without awaiting in between: the publisher enqueues synchronously, so the
    // messages leave on its one channel in id order, and all confirms are awaited together.
    // With tracing on, each publish is a PRODUCER span continuing the trace stored with its row,
    // carried to the consumers in the AMQP headers (docs/TRACING.md); off, no span and no header.
    const tracing = propagationEnabled();
    const outcomes = await Promise.allSettled(
      rows.map((row) => {
        const headers = options.headers?.(row.payload);
        if (!tracing)
          return publisher.publish(row.payload, {
            routingKey: row.routingKey,
            timeoutMs: publishTimeoutMs,
            ...(headers ? { headers } : {}),
          });
        const span = startPublishSpan(row, producer, tracing);
        return publisher
          .publish(row.payload, {
            routingKey: row.routingKey,
            timeoutMs: publishTimeoutMs,
            headers: { ...headers, ...span.headers },
          })
          .then(
            () => span.end(),
            (err: unknown) => {
              span.end(err);
              throw err;
            },
          );
      }),
    );
    const sent: string[] = [];
    const failed: Failure[] = [];
    outcomes.forEach((outcome, i) => {
      const row = rows[i];
      if (outcome.status === 'fulfilled') {
        sent.push(row.id);
        metrics.published.inc({ producer, outcome: 'confirmed' });
        return;
      }
      const err = outcome.reason as Error;
      const attempts = row.attempts + 1;
      const retryInMs = retryDelayMs(attempts);
      failed.push({ id: row.id, error: `${err?.name ?? 'Error'}: ${errorMessage(err, 1000)}`, retryInMs });
      metrics.published.inc({ producer, outcome: outcomeOf(err) });
      // Attempts 1, 2, 4, 8, ... at warn: a row failing for hours (an unbound routing key) stays
      // visible without flooding the log; every attempt counts in outbox_published_total.
      const level = (attempts & (attempts - 1)) === 0 ? 'warn' : 'debug';
      logger[level](
        {
          eventId: row.eventId,
          eventType: row.eventType,
          aggregateId: row.aggregateId,
          attempts,
          retryInMs,
          err: errorMessage(err, 300),
        },
        'outbox publish failed; the row stays unsent and is retried',
      );
    });
    return { sent, failed };
  }

  /**
   * One cycle, in one short transaction: find the next `batchSize` aggregates' heads (round robin
   * over aggregates, from where the last cycle stopped) and lock those that are due (one
   * statement), publish them, await every confirm, mark, commit.
   */
  async function cycle(): Promise<CycleResult> {
    let stopTimer: (() => void) | undefined;
    // Asynchronous commit: this transaction only records what the broker already confirmed. Should
    // PostgreSQL crash before the mark reaches disk, the rows are published again: a duplicate that
    // consumers absorb (they deduplicate on the event id), never a loss. The producers' outbox
    // inserts keep synchronous commit. The relay's commit then waits for no WAL flush.
    const result = await withTransaction(pool, { synchronousCommit: false }, async (tx): Promise<CycleResult> => {
      const from = cursor;
      const { heads, rows } = await claimHeads(tx, producer, from, batchSize);
      // A full page: more aggregates may follow it. A short page: the end was reached, so the scan
      // wraps around; the aggregates before `from` have not been looked at in this pass yet.
      const fullPage = heads.length === batchSize;
      cursor = fullPage ? heads[heads.length - 1].aggregateId : '';
      const more = fullPage || from !== '';
      if (rows.length === 0) {
        const waits = heads.map((h) => h.dueInMs).filter((ms) => ms > 0);
        return { claimed: 0, more, retryInMs: waits.length ? Math.min(...waits) : null };
      }
      metrics.batchSize.observe({ producer }, rows.length);
      stopTimer = metrics.publishToMark.startTimer({ producer });
      const { sent, failed } = await publishAll(rows);
      if (crashAfterPublish && sent.length > 0) {
        // Fault injection: confirmed by the broker, not yet marked. The rows stay locked only until
        // the connection dies with the process; the next run publishes them again.
        process.kill(process.pid, 'SIGKILL');
        await new Promise(() => undefined);
      }
      await markSent(tx, sent);
      await markFailed(tx, failed);
      return { claimed: rows.length, more, retryInMs: null };
    });
    // The marks count once that COMMIT succeeded; had it failed, the confirmed rows would be
    // published again by a later cycle (a duplicate, absorbed by consumers' idempotency).
    stopTimer?.();
    return result;
  }

  async function loop(): Promise<void> {
    while (!stopping) {
      let result: CycleResult;
      cycleStartedAt = Date.now();
      try {
        result = await cycle();
        dbFailures = 0;
      } catch (err) {
        dbFailures += 1;
        const retryInMs = dbRetryDelayMs(dbFailures);
        logger.error(
          { err: errorMessage(err), failures: dbFailures, retryInMs },
          'outbox relay cycle failed (database); retrying',
        );
        await sleep(retryInMs);
        continue;
      } finally {
        cycleStartedAt = undefined;
      }
      // Marking rows sent made the next row of those aggregates a head, and a full page means more
      // aggregates to look at: go again at once. Only a cycle with nothing to do waits, for a
      // notification, the poll interval or a retry coming due.
      if (result.claimed > 0 || result.more || wakeRequested) {
        wakeRequested = false;
        continue;
      }
      await sleep(Math.max(0, Math.min(pollIntervalMs, result.retryInMs ?? Infinity)));
    }
  }

  return {
    async start() {
      if (started || stopping) return;
      started = true;
      await listener.start();
      loopDone = loop();
      logger.info({ batchSize, pollIntervalMs, listening: listener.isListening() }, 'outbox relay started');
    },
    stop() {
      if (stopping) return stopped;
      stopping = true;
      stopped = (async () => {
        wake();
        await loopDone;
        await listener.stop();
        unwatch();
        if (started) logger.info('outbox relay stopped');
      })();
      return stopped;
    },
    isHealthy() {
      const stuck = cycleStartedAt !== undefined && Date.now() - cycleStartedAt > publishTimeoutMs + 30_000;
      return started && !stopping && dbFailures < 3 && !stuck;
    },
  };
}
