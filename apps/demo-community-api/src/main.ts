/**
 * Composition root of the demo community API (port 3000): the reference producer. Writes and their
 * events commit together through the outbox; an in-process relay publishes them with confirms; a
 * built-in traffic generator (DEMO_TRAFFIC_RATE, default 2/s) makes notifications flow on `npm start`.
 */
import type { AddressInfo } from 'node:net';
import { loadConfig } from '@community/config';
import { COMMUNITY_TOPOLOGY } from '@community/contracts';
import { classifyPgError, createPgPool } from '@community/db';
import { createMessaging } from '@community/messaging';
import { answers, createLogger, createRegistry, readinessState, runService } from '@community/observability';
import { createRelay } from '@community/outbox';
import { buildApp } from './app';
import { DEMO_CONFIG, SERVICE } from './config';
import { PRODUCER } from './events';
import { startTraffic, type Traffic } from './traffic/generator';

async function main(): Promise<void> {
  const config = loadConfig(DEMO_CONFIG);
  const logger = createLogger({ service: SERVICE, level: config.LOG_LEVEL });
  const registry = createRegistry({ service: SERVICE });
  const pool = createPgPool(config.DATABASE_URL, { max: 10, applicationName: SERVICE, logger });
  const messaging = createMessaging({ url: config.AMQP_URL, service: SERVICE, topology: COMMUNITY_TOPOLOGY, logger, registry, classifiers: [classifyPgError] });
  const relay = createRelay({
    pool,
    publisher: messaging.publisher,
    producer: PRODUCER,
    logger,
    registry,
    databaseUrl: config.DATABASE_URL,
    pollIntervalMs: config.OUTBOX_POLL_INTERVAL_MS,
    batchSize: config.OUTBOX_BATCH_SIZE,
  });
  const state = readinessState();
  const app = buildApp({
    pool,
    logger,
    registry,
    jwtSecret: config.JWT_SECRET,
    readiness: async () => ({
      ...state.checks(),
      database: await answers(() => pool.query('SELECT 1')),
      amqp: messaging.readiness().amqp,
      relay: relay.isHealthy(),
    }),
  });
  let traffic: Traffic | undefined;

  await runService({
    name: SERVICE,
    logger,
    app,
    port: config.PORT,
    readiness: state,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    start: async () => {
      // Writes do not need the broker (the outbox holds their events), but the relay does.
      await messaging.start();
      await relay.start();
      if (config.DEMO_TRAFFIC_RATE > 0) {
        const { port } = app.server.address() as AddressInfo;
        traffic = startTraffic({ baseUrl: `http://127.0.0.1:${port}`, rate: config.DEMO_TRAFFIC_RATE, logger: logger.child({ component: 'traffic' }) });
        logger.info({ rate: config.DEMO_TRAFFIC_RATE }, 'demo traffic started (DEMO_TRAFFIC_RATE=0 disables it)');
      }
    },
    stop: async () => {
      // Traffic first (it calls this very server), then the relay finishes its cycle (confirms and
      // marks), then the broker connection and the pool close.
      await traffic?.stop();
      await relay.stop();
      await messaging.stop(5000);
      await pool.end();
    },
  });
}

main().catch((err: Error) => {
  // A configuration error names the variable; anything else before the logger exists is printed as is.
  console.error(err.message);
  process.exit(1);
});
