/**
 * A consumer in its own process, for tests that kill or SIGTERM it.
 *   CHILD_MODE=crash  the handler kills its own process on every delivery (a poison message)
 *   CHILD_MODE=slow   the handler takes CHILD_HANDLER_MS and prints "HANDLED <eventId>" when done
 * SIGTERM: graceful stop (the same path a service takes), then exit 0.
 */
import { Registry } from 'prom-client';
import pino from 'pino';
import { createMessaging } from '../src';
import { testTopology, validateTestEvent } from './support/events';

const queue = process.env.CHILD_QUEUE ?? 'test.child';
const mode = process.env.CHILD_MODE ?? 'slow';
const handlerMs = Number(process.env.CHILD_HANDLER_MS ?? 100);
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'warn' }, pino.destination(2));

const messaging = createMessaging({
  url: process.env.AMQP_URL!,
  service: `child-${mode}`,
  topology: testTopology([
    { name: queue, deliveryLimit: Number(process.env.CHILD_DELIVERY_LIMIT ?? (queue === 'test.crash' ? 1 : 20)) },
  ]),
  logger,
  registry: new Registry(),
  classifiers: [],
});

messaging.consume({
  queue,
  name: `child-${mode}`,
  prefetch: Number(process.env.CHILD_PREFETCH ?? 10),
  validate: validateTestEvent,
  handle: async (event) => {
    if (mode === 'crash') process.kill(process.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, handlerMs));
    process.stdout.write(`HANDLED ${event.id}\n`);
    return 'processed';
  },
});

process.once('SIGTERM', () => {
  messaging
    .stop(Number(process.env.CHILD_DEADLINE_MS ?? 5000))
    .then(() => process.exit(0))
    .catch(() => process.exit(1));
});

messaging
  .start()
  .then(() => process.stdout.write('READY\n'))
  .catch((err: unknown) => {
    // The parent test reads this, and the exit code, instead of waiting for a READY that never comes.
    process.stderr.write(`start failed: ${String(err)}\n`);
    process.exit(1);
  });
