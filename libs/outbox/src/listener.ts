import pg from 'pg';
import type { Logger } from 'pino';
import { OUTBOX_CHANNEL } from './enqueue';

export interface OutboxListener {
  /** Resolves after the first connection attempt, whether it succeeded or not (polling covers a failure). */
  start(): Promise<void>;
  stop(): Promise<void>;
  isListening(): boolean;
}

/**
 * A dedicated connection holding `LISTEN outbox` (a pooled connection cannot: LISTEN belongs to a
 * session). On any error it reconnects with capped, jittered backoff, and calls `onWake` once it is
 * back: notifications sent while it was down are lost, so the relay must look at the table.
 */
export function createListener(opts: { databaseUrl: string; producer: string; logger: Logger; onWake: () => void }): OutboxListener {
  const { databaseUrl, producer, logger, onWake } = opts;
  let client: pg.Client | undefined;
  let listening = false;
  let stopped = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    if (stopped) return;
    const c = new pg.Client({ connectionString: databaseUrl, application_name: `outbox-listener:${producer}` });
    client = c;
    c.on('notification', (msg) => {
      if (msg.channel === OUTBOX_CHANNEL && msg.payload === producer) onWake();
    });
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('connection ended')));
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (client !== c || stopped) return;
      listening = true;
      if (failures > 0) logger.info({ producer }, 'outbox listener reconnected');
      failures = 0;
      onWake();
    } catch (err) {
      lost(c, err as Error);
    }
  }

  function lost(c: pg.Client, err: Error): void {
    if (client !== c) return; // an old client's late event
    client = undefined;
    listening = false;
    c.removeAllListeners('end');
    c.on('error', () => undefined);
    c.end().catch(() => undefined);
    if (stopped) return;
    failures += 1;
    const delay = Math.random() * Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
    logger.warn({ err: err.message, producer, retryInMs: Math.round(delay) }, 'outbox listener lost its connection; polling meanwhile');
    retryTimer = setTimeout(() => void connect(), delay);
    retryTimer.unref();
  }

  return {
    start: () => connect(),
    async stop() {
      stopped = true;
      listening = false;
      clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      if (c) await c.end().catch(() => undefined);
    },
    isListening: () => listening,
  };
}
