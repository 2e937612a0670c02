// A real process for run-service.spec.ts: signals and process.exit cannot be tested in-process.
// Behaviour is driven by env: STOP_MS (how long stop() drains), SHUTDOWN_TIMEOUT_MS, FAIL_START.
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, createRegistry } from '@community/observability';
import { buildServer, readinessState, runService } from '../index';

const logger = createLogger({ service: 'fixture' });
const readiness = readinessState();
const app = buildServer({ logger, registry: createRegistry({ service: 'fixture' }), readiness: readiness.checks });
app.addHook('onClose', async () => logger.info('app closed'));
let address = '';

// runService reports its own failures (logs them and exits non-zero): nothing to await here.
void runService({
  name: 'fixture',
  logger,
  app,
  port: 0,
  host: '127.0.0.1',
  readiness,
  shutdownTimeoutMs: Number(process.env['SHUTDOWN_TIMEOUT_MS'] ?? 5000),
  start: async () => {
    if (process.env['FAIL_START']) throw new Error('broker unreachable');
    readiness.set('consumer', true);
  },
  stop: async () => {
    // What a load balancer sees while consumers drain.
    const res = await fetch(`${address}/readyz`);
    logger.info({ readyzStatus: res.status }, 'stop: draining');
    await sleep(Number(process.env['STOP_MS'] ?? 0));
    logger.info('stop: drained');
  },
}).then((running) => {
  address = running.address;
});
