import type { Logger } from 'pino';
import { createListenClient, type ListenClient } from '@community/db';
import { OUTBOX_CHANNEL } from './enqueue';

/**
 * The relay's wake-up call: LISTEN on the outbox channel, whose payload is the producer, so each
 * relay wakes only for its own rows. The connection reconnects on its own (libs/db); while it is
 * down the relay's polling covers, and once it is back `onWake` runs, because whatever was
 * committed meanwhile was announced to nobody.
 */
export function createListener(opts: {
  databaseUrl: string;
  producer: string;
  logger: Logger;
  onWake: () => void;
}): ListenClient {
  const { producer, onWake } = opts;
  return createListenClient({
    connectionString: opts.databaseUrl,
    channels: [OUTBOX_CHANNEL],
    applicationName: `outbox-listener:${producer}`,
    logger: opts.logger.child({ component: 'outbox-listener', producer }),
    onNotification: (n) => {
      if (n.payload === producer) onWake();
    },
    onListening: onWake,
  });
}
