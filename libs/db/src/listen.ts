import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Logger } from 'pino';
import { backoffDelay } from '@community/messaging';
import { TRANSACTION_POOLER_PARAM, transactionPooler } from './pool';

export interface ListenNotification {
  channel: string;
  payload: string | undefined;
}

export interface ListenClientOptions {
  connectionString: string;
  /** Channels to LISTEN on; each is quoted as an identifier, so `pg_notify('<channel>', …)` reaches it. */
  channels: readonly string[];
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  logger: Pick<Logger, 'info' | 'warn'>;
  onNotification(notification: ListenNotification): void;
  /**
   * After every successful LISTEN, the first one included. A notification sent while nobody listened
   * is lost for good, so this is where the caller re-reads whatever it watches.
   */
  onListening?(): void;
  /** After the connection was lost (never after stop()); a reconnect is already scheduled. */
  onLost?(err: Error): void;
  /** Reconnect delays, `backoffDelay` with full jitter. Default 250 ms doubling up to 10 s. */
  backoff?: { baseMs: number; maxMs: number };
}

export interface ListenClient {
  /** Resolves after the first attempt, whether it succeeded or not: the client keeps retrying. */
  start(): Promise<void>;
  /** Ends the connection and stops reconnecting. */
  stop(): Promise<void>;
  isListening(): boolean;
}

/**
 * One dedicated connection holding LISTEN, reconnected with backoff for as long as the client runs.
 * A pooled connection cannot do this: LISTEN belongs to a session, and the pool hands sessions out.
 *
 * Every connection attempt is one iteration of a loop that owns its pg.Client from creation to
 * end: the client has its 'error' listener before it connects (an unhandled 'error' would crash
 * the process), and it is ended whatever happened, including a LISTEN that failed after the
 * connection succeeded, so no attempt leaves a connection behind.
 */
export function createListenClient(options: ListenClientOptions): ListenClient {
  const { logger, channels } = options;
  // Through PgBouncer in transaction mode, LISTEN registers on whichever server session ran it, and
  // the notifications reach whichever client uses that session next, or nobody (docs/DEPLOY.md
  // "Connection budget"): refused rather than silently deaf.
  if (transactionPooler(options.connectionString).pooled) {
    throw new Error(
      `LISTEN ${channels.join(', ')} needs a direct connection to PostgreSQL; a ${TRANSACTION_POOLER_PARAM}=true URL goes through a transaction pooler`,
    );
  }
  const backoff = options.backoff ?? { baseMs: 250, maxMs: 10_000 };
  const stopping = new AbortController();
  let listening = false;
  let loop: Promise<void> | undefined;

  /** One connection's life, from creation to end: resolves with the error that ended it. */
  async function session(connected: () => void): Promise<Error> {
    const client = new pg.Client({
      connectionString: options.connectionString,
      application_name: options.applicationName,
    });
    let onLost!: (err: Error) => void;
    const lost = new Promise<Error>((resolve) => (onLost = resolve));
    client.on('error', onLost);
    client.on('end', () => onLost(new Error('the LISTEN connection ended')));
    client.on('notification', (msg) => options.onNotification({ channel: msg.channel, payload: msg.payload }));
    const onStop = () => onLost(new Error('stopped'));
    stopping.signal.addEventListener('abort', onStop, { once: true });
    try {
      const listen = async () => {
        await client.connect();
        await client.query(channels.map((c) => `LISTEN ${client.escapeIdentifier(c)}`).join('; '));
      };
      // An error event can come instead of a rejection (the socket dies while connecting): race both.
      await Promise.race([listen(), lost.then((err) => Promise.reject(err))]);
      listening = true;
      connected();
      options.onListening?.();
      return await lost;
    } catch (err) {
      return err as Error;
    } finally {
      listening = false;
      stopping.signal.removeEventListener('abort', onStop);
      await client.end().catch(() => undefined);
    }
  }

  async function run(firstAttemptDone: () => void): Promise<void> {
    let attempt = 0;
    let wasLost = false;
    while (!stopping.signal.aborted) {
      const startedAt = Date.now();
      const err = await session(() => {
        if (wasLost) logger.info({ channels }, 'LISTEN connection restored');
        firstAttemptDone();
      });
      firstAttemptDone();
      if (stopping.signal.aborted) return;
      wasLost = true;
      // A connection that held for a while starts the backoff over; one that keeps failing (or
      // flapping: connected, then lost at once) backs off further each time.
      if (Date.now() - startedAt > backoff.maxMs) attempt = 0;
      const delayMs = backoffDelay(attempt++, backoff);
      logger.warn({ err: err.message, channels, retryInMs: delayMs }, 'LISTEN connection lost; reconnecting');
      options.onLost?.(err);
      await sleep(delayMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
    firstAttemptDone(); // stopped before any attempt: start() still resolves
  }

  return {
    start() {
      if (loop) throw new Error('the LISTEN client was already started');
      return new Promise<void>((resolve) => {
        loop = run(resolve);
      });
    },
    async stop() {
      stopping.abort();
      await loop;
    },
    isListening: () => listening,
  };
}
