import { setTimeout as sleep } from 'node:timers/promises';
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from 'pino';
import { backoffDelay } from './backoff';
import { connectionOrder } from './urls';

export interface ConnectionOptions {
  /** AMQP_URL: one URL, or every node of a cluster comma-separated (urls.ts). */
  url: string;
  /** Shown in the management UI's connection list. */
  name: string;
  logger: Logger;
  heartbeatSeconds?: number;
  maxBackoffMs?: number;
}

/**
 * One AMQP connection per process, shared by the publisher and every consumer channel.
 *
 * amqp-connection-manager reconnects and re-runs channel setups. We add exponential backoff with
 * full jitter (through `findServers`, which it calls before every attempt) because after a broker
 * restart every replica reconnects at once, and a broker with a small file-descriptor limit does
 * not survive a reconnect storm (it runs out of file descriptors and refuses everyone).
 */
export function connect(options: ConnectionOptions): AmqpConnectionManager {
  const { url, name, logger } = options;
  // Tried in turn (amqp-connection-manager moves to the next URL after a failure, and asks
  // findServers again once all have failed: the backoff then applies to the whole round).
  const urls = connectionOrder(url);
  const maxBackoffMs = options.maxBackoffMs ?? 15_000;
  let failures = 0;
  let closed = false;

  const manager = amqp.connect([], {
    heartbeatIntervalInSeconds: options.heartbeatSeconds ?? 5,
    reconnectTimeInSeconds: 0.1,
    connectionOptions: { clientProperties: { connection_name: name } },
    findServers: async () => {
      if (failures > 0)
        await sleep(backoffDelay(failures, { baseMs: 250, maxMs: maxBackoffMs }), undefined, { ref: false });
      failures += 1;
      // An empty list makes the manager wait and call us again; after close() it stops instead.
      return closed ? [] : urls;
    },
  });
  const safe = (u: unknown) => String(u).replace(/\/\/[^@/]*@/, '//***@');
  manager.on('connect', ({ url: connected }) => {
    failures = 0;
    logger.info({ broker: safe(connected) }, 'amqp connected');
  });
  manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'amqp disconnected; reconnecting'));
  manager.on('connectFailed', ({ err }) => {
    if (!closed)
      logger.warn(
        { err: err?.message, attempt: failures, nodes: urls.length },
        urls.length > 1 ? 'amqp connect failed; trying the next node' : 'amqp connect failed; retrying with backoff',
      );
  });
  manager.on('blocked', ({ reason }) => logger.warn({ reason }, 'amqp connection blocked by broker (resource alarm)'));
  manager.on('unblocked', () => logger.info('amqp connection unblocked'));

  const close = manager.close.bind(manager);
  manager.close = async () => {
    closed = true;
    return close();
  };
  return manager;
}
