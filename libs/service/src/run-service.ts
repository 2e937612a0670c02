import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '@community/observability';
import type { ReadinessState } from './readiness';
import { listen } from './server';

export interface RunServiceOptions {
  name: string;
  logger: Logger;
  app: FastifyInstance;
  port: number;
  /** Default 0.0.0.0. */
  host?: string;
  /** Flipped to not-ready before anything stops. Pass the one behind the app's /readyz. */
  readiness?: ReadinessState;
  /** Connect and start consuming; runs after the HTTP server listens so probes answer meanwhile. */
  start: () => Promise<void>;
  /** Stop consuming and let in-flight work finish and ack (the consumer runtime drains). */
  stop: () => Promise<void>;
  /** Past this deadline the process exits 1 even if draining has not finished. */
  shutdownTimeoutMs: number;
}

export interface RunningService {
  /** The address the HTTP server listens on. */
  address: string;
  /** Run the graceful shutdown as if SIGTERM had arrived. */
  close: () => void;
}

/**
 * Process lifecycle: listen → start(); on SIGTERM/SIGINT (or an uncaught error):
 * readiness false → stop() → app.close() → exit 0 (1 after an uncaught error).
 *
 * The order matters: readiness goes false first so the load balancer stops sending work while
 * consumers drain; HTTP closes last because reads and /metrics stay useful during the drain.
 * A shutdown that exceeds `shutdownTimeoutMs` exits 1; unacked messages are redelivered, which
 * the idempotent handlers absorb.
 */
export async function runService(options: RunServiceOptions): Promise<RunningService> {
  const { name, logger, app, readiness } = options;

  const graceful = closeWithGrace(
    {
      delay: options.shutdownTimeoutMs,
      logger: { error: (value: unknown) => logger.error(value) },
      onTimeout: (delay) =>
        logger.error({ service: name, timeoutMs: delay }, 'shutdown exceeded its deadline; exiting with code 1'),
      onSecondSignal: (signal) => logger.error({ signal }, 'second signal during shutdown; exiting with code 1'),
    },
    async ({ signal, err, manual }) => {
      if (err) logger.fatal({ err }, 'uncaught error; shutting down');
      else if (manual || signal === 'SIGTERM' || signal === 'SIGINT') logger.info({ signal, manual }, 'shutting down');
      // Anything else is not how an orchestrator or a person stops us: close-with-grace also shuts
      // down (exit 0) on SIGHUP, SIGQUIT, SIGUSR2 and the like, and on `beforeExit`, when the event
      // loop ran empty (nothing left listening). Logged at warn so the cause of such an exit is in
      // the log even at LOG_LEVEL=warn (a chaos run once saw an unexplained exit 0).
      else
        logger.warn(
          { signal: signal ?? 'none', trigger: signal ? 'signal' : 'event loop empty (beforeExit)' },
          'shutting down: unexpected trigger',
        );
      readiness?.markShuttingDown();
      await options.stop();
      await app.close();
      logger.info('shutdown complete');
    },
  );

  try {
    const address = await listen(app, options.port, options.host);
    await options.start();
    logger.info({ address }, `${name} started`);
    return { address, close: graceful.close };
  } catch (err) {
    // Nothing was consumed yet, so there is nothing to drain: exit at once and let the
    // orchestrator restart with backoff. Open sockets die with the process.
    logger.fatal({ err }, `${name} failed to start`);
    graceful.uninstall();
    process.exit(1);
  }
}
