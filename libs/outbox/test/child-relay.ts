/**
 * An outbox relay in its own process, for the crash test. With OUTBOX_CRASH_AFTER_PUBLISH=1 it
 * SIGKILLs itself after its first confirmed publish, before marking the rows sent.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { classifyPgError, createPgPool } from '@community/db';
import { createMessaging } from '@community/messaging';
import { createRelay } from '../src';
import { PRODUCER, topology } from './helpers';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`child-relay: ${name} is required`);
  return value;
}

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'warn' }, pino.destination(2));
const registry = new Registry();
const pool = createPgPool(env('DATABASE_URL'), { max: 2 });
const messaging = createMessaging({
  url: env('AMQP_URL'),
  service: 'child-relay',
  topology,
  logger,
  registry,
  classifiers: [classifyPgError],
});
const relay = createRelay({
  pool,
  publisher: messaging.publisher,
  producer: PRODUCER,
  logger,
  registry,
  databaseUrl: env('DATABASE_URL'),
});

messaging
  .start()
  .then(() => relay.start())
  .then(() => process.stdout.write('READY\n'))
  .catch((err: unknown) => {
    // The parent test reads this, and the exit code, instead of waiting for a READY that never comes.
    process.stderr.write(`start failed: ${String(err)}\n`);
    process.exit(1);
  });
