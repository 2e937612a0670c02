import { setTimeout as sleep } from 'node:timers/promises';
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from 'pino';
import { backoffDelay } from './backoff';

export interface ConnectionOptions {
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
  const maxBackoffMs = options.maxBackoffMs ?? 15_000;
  let failures = 0;
  let closed = false;

  const manager = amqp.connect([], {
    heartbeatIntervalInSeconds: options.heartbeatSeconds ?? 5,
    reconnectTimeInSeconds: 0.1,
    connectionOptions: { clientProperties: { connection_name: name } },
    findServers: async () => {
      if (failures > 0) await sleep(backoffDelay(failures, { baseMs: 250, maxMs: maxBackoffMs }), undefined, { ref: false });
      failures += 1;
      // An empty list makes the manager wait and call us again; after close() it stops instead.
      return closed ? [] : [url];
    },
  });
  const safeUrl = url.replace(/\/\/[^@/]*@/, '//***@');
  manager.on('connect', () => {
    failures = 0;
    logger.info({ broker: safeUrl }, 'amqp connected');
  });
  manager.on('disconnect', ({ err }) => logger.warn({ err: err?.message }, 'amqp disconnected; reconnecting'));
  manager.on('connectFailed', ({ err }) => {
    if (!closed) logger.warn({ err: err?.message, attempt: failures }, 'amqp connect failed; retrying with backoff');
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
